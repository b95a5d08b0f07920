#!/usr/bin/env bash
# A scripted pull of each outcome with curl, then the counts: what GET /api/insights and
# /metrics say is exactly what was pulled, and a bad sample or query counts nothing.
source "$(dirname "$0")/lib.sh"
start_server --insights-feed 'team.*'

# pull SESSION FIRST_SEQ T0 INPUT Y… : drags through each offset, 100 ms apart, then
# releases at the last one and comes back to rest in the same request, as the page does.
pull() {
    local session=$1 seq=$2 t=$3 input=$4
    shift 4
    local last=0
    for y in "$@"; do
        sample "$session" "$seq" "$y" drag "\"t\":$t,\"input\":\"$input\",\"viewportHeight\":700,\"contentHeight\":5000" >/dev/null
        seq=$((seq + 1))
        t=$((t + 100))
        last=$y
    done
    curl -s -X POST "$BASE/api/sessions/$session/samples" "${JSON_TYPE[@]}" --data-binary \
        "{\"samples\":[{\"seq\":$seq,\"t\":$t,\"y\":$last,\"phase\":\"release\"},{\"seq\":$((seq + 1)),\"t\":$((t + 1)),\"y\":0,\"phase\":\"scroll\"}]}" >/dev/null
}

one=$(new_session '{"preset":"default"}')
# A refresh by touch, 90 points at release.
pull "$one" 1 0 touch -40 -90
# Armed, taken back to 40, released: no refresh (mouse).
pull "$one" 10 1000 mouse -90 -40
# A nudge of 5 points (wheel).
pull "$one" 20 2000 wheel -5
# A second refresh 4 s after the first: retriggered.
pull "$one" 30 4000 touch -95
# A load-more from the bottom by a program: maxY = 4300, 130 past it.
two=$(new_session '{"preset":"uikit-bottom","feed":"team.eng"}')
sample "$two" 1 4300 scroll '"contentHeight":5000,"viewportHeight":700' >/dev/null
pull "$two" 2 0 program 4350 4430

# Bad input is refused and counts nothing.
expect "an unknown input is 400" "$(status POST "/api/sessions/$one/samples" '{"seq":99,"y":-90,"input":"pen"}')" 400
expect "a negative viewport is 422" "$(status POST "/api/sessions/$one/samples" '{"seq":99,"y":-90,"input":"touch","viewportHeight":-1}')" 422
expect "since that is no time is 400" "$(status GET '/api/insights?since=yesterday')" 400
expect "a pattern not counted is 404" "$(status GET '/api/insights?feed=user:*')" 404

expect "insights answer" "$(status GET /api/insights)" 200
totals=$(json '" ".join("%s=%s" % (k, d["total"][k]) for k in ["begun","armed","takenBack","refreshed","loadedMore","retriggered","short"])' <"$WORK/body")
expect "the counts" "$totals" "begun=5 armed=4 takenBack=1 refreshed=2 loadedMore=1 retriggered=1 short=1"
expect "by input" "$(json '",".join("%s:%s" % (k, v["begun"]) for k, v in sorted(d["byInput"].items()))' <"$WORK/body")" "mouse:1,program:1,touch:2,wheel:1"
expect "by feed pattern" "$(json '",".join("%s:%s" % (k, v["begun"]) for k, v in sorted(d["byFeed"].items()))' <"$WORK/body")" "*:4,team.*:1"
expect "by band" "$(json '",".join(sorted(d["byBand"]))' <"$WORK/body")" "600-899"
expect "the distances at release" "$(json 'd["total"]["distance"]["sum"]' <"$WORK/body")" "$((90 + 40 + 5 + 95 + 130))"
expect "one pattern asked for" "$(status GET '/api/insights?feed=team.*')" 200
expect "only that pattern" "$(json 'd["total"]["begun"], d["feeds"]' <"$WORK/body")" "1 ['team.*']"
expect "since a later slot counts nothing yet" "$(status GET "/api/insights?since=$(date -u -d '+10 minutes' +%Y-%m-%dT%H:%M:%SZ)")" 200
expect "nothing since" "$(json 'd["total"]["begun"]' <"$WORK/body")" 0

metrics=$(curl -s "$BASE/metrics")
expect_match "refreshes by touch" "$metrics" 'ptr_pulls_total\{outcome="refreshed",input="touch"\} 2'
expect_match "taken back by mouse" "$metrics" 'ptr_pulls_total\{outcome="takenBack",input="mouse"\} 1'
expect_match "distance histogram" "$metrics" 'ptr_pull_distance_points_count 5'
finish
