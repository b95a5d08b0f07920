#!/usr/bin/env bash
# Access with curl: a server with an HMAC secret and an Ed25519 public key; tokens minted
# here (HS256 by Python's standard library, EdDSA by `openssl pkeyutl`). A public feed reads
# without a token, a private one with a token that may read it, by header or cookie; a
# refusal reads the same for a feed that exists and one that does not; a session's stream
# belongs to its token's owner; expired, unsigned and tampered tokens are refused; a key
# file that is no key stops the start.
source "$(dirname "$0")/lib.sh"

mkdir -p "$WORK/keys"
openssl rand -hex 32 >"$WORK/keys/app.secret"
openssl genpkey -algorithm ed25519 -out "$WORK/ed-private.pem" 2>/dev/null
openssl pkey -in "$WORK/ed-private.pem" -pubout -out "$WORK/keys/2026-11.pem"
PUBLISH_TOKEN=e2e-publish-token

# mint ALG CLAIMS [HEADER FIELDS]: a token of CLAIMS (JSON; `exp` is added, ten minutes
# ahead, unless given) signed with the HMAC secret (HS256), the Ed25519 key (EdDSA), or
# nothing (none).
mint() {
    python3 - "$1" "$2" "${3:-{\}}" "$WORK" <<'PY'
import base64, hashlib, hmac, json, subprocess, sys, time
alg, claims, extra, work = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
claims.setdefault("exp", int(time.time()) + 600)
b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
header = {"alg": alg, "typ": "JWT", **extra}
signing = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
if alg == "HS256":
    secret = open(f"{work}/keys/app.secret", "rb").read().removesuffix(b"\n")
    signature = hmac.new(secret, signing.encode(), hashlib.sha256).digest()
elif alg == "EdDSA":
    # pkeyutl signs Ed25519 raw input from a file only (it must know its length).
    open(f"{work}/signing-input", "w").write(signing)
    signature = subprocess.run(
        ["openssl", "pkeyutl", "-sign", "-rawin", "-inkey", f"{work}/ed-private.pem", "-in", f"{work}/signing-input"],
        check=True, capture_output=True).stdout
else:
    signature = b""
print(signing + "." + b64(signature))
PY
}

# call METHOD PATH [curl flags…]: the status; the body goes to $WORK/body, the head to
# $WORK/head.
call() {
    local method=$1 path=$2
    shift 2
    curl -s -o "$WORK/body" -D "$WORK/head" -w '%{http_code}' -X "$method" "$@" "$BASE$path"
}
challenge() { tr -d '\r' <"$WORK/head" | sed -n 's/^www-authenticate: //Ip'; }
error_code() { json 'd["error"]' <"$WORK/body"; }
refused() { curl -s "$BASE/metrics" | awk -v reason="ptr_auth_refused_total{reason=\"$1\"}" '$1 == reason {print $2 + 0}'; }

start_server --auth-key "$WORK/keys/app.secret" --auth-key "$WORK/keys/2026-11.pem" --publish-token "$PUBLISH_TOKEN"

alice=$(mint HS256 '{"sub":"alice","ptr":{"read":["user:42"],"publish":["user:42"]}}')
bob=$(mint HS256 '{"sub":"bob","ptr":{"read":["user:42"]}}')
carol=$(mint HS256 '{"sub":"carol","ptr":{"read":["user:7"]}}')
team=$(mint EdDSA '{"sub":"svc","ptr":{"read":["team.*"],"publish":["team.*"]}}' '{"kid":"2026-11"}')

# Publishing: a right, or the static token.
expect "a publish to user:42 without a token is 401" "$(call POST /api/feeds/user:42/items "${JSON_TYPE[@]}" -d '{"title":"x"}')" 401
expect "a publish with a read right only is 403" \
    "$(call POST /api/feeds/user:42/items "${JSON_TYPE[@]}" -d '{"title":"x"}' -H "Authorization: Bearer $bob")" 403
expect "  insufficient_scope" "$(error_code)" insufficient_scope
expect "a publish with a publish right is 201" \
    "$(call POST /api/feeds/user:42/items "${JSON_TYPE[@]}" -d '{"id":"o1","title":"Order shipped"}' -H "Authorization: Bearer $alice")" 201
expect "a publish with the right in the ptr_token cookie is 201" \
    "$(call POST /api/feeds/user:42/items "${JSON_TYPE[@]}" -d '{"id":"o0","title":"Order placed"}' --cookie "ptr_token=$alice")" 201
expect "a publish with the static token is 201" \
    "$(call POST /api/feeds/user:42/items "${JSON_TYPE[@]}" -d '{"id":"o2","title":"Order delivered"}' -H "Authorization: Bearer $PUBLISH_TOKEN")" 201
expect "an EdDSA token with a prefix right publishes to team.eng" \
    "$(call POST /api/feeds/team.eng/items "${JSON_TYPE[@]}" -d '{"title":"Standup moved"}' -H "Authorization: Bearer $team")" 201
expect "the static token publishes to main" "$(call POST /api/items "${JSON_TYPE[@]}" -d '{"title":"Hello"}' -H "Authorization: Bearer $PUBLISH_TOKEN")" 201

# Reading.
expect "main is public: read without a token" "$(call GET /api/feeds/main/items)" 200
expect "  its item" "$(json 'd["items"][0]["title"]' <"$WORK/body")" Hello
expect "/api/items too" "$(call GET /api/items)" 200
expect "a private feed without a token is 401" "$(call GET /api/feeds/user:42/items)" 401
expect "  invalid_token" "$(error_code)" invalid_token
expect "  with its challenge" "$(challenge)" 'Bearer error="invalid_token"'
expect "its head too" "$(call GET /api/feeds/user:42)" 401
expect "with another feed's token it is 403" "$(call GET /api/feeds/user:42/items -H "Authorization: Bearer $carol")" 403
expect "  insufficient_scope" "$(error_code)" insufficient_scope
expect "  with its challenge" "$(challenge)" 'Bearer error="insufficient_scope"'
expect "with its reader's token, by header, it is 200" "$(call GET /api/feeds/user:42/items -H "Authorization: Bearer $bob")" 200
expect "  its items" "$(json '[i["title"] for i in d["items"]]' <"$WORK/body")" "['Order delivered', 'Order placed', 'Order shipped']"
expect "by the ptr_token cookie, 200" "$(call GET /api/feeds/user:42/items --cookie "theme=dark; ptr_token=$bob")" 200
expect "  its items" "$(json 'len(d["items"])' <"$WORK/body")" 3
expect "an EdDSA token with team.* reads team.eng" "$(call GET /api/feeds/team.eng/items -H "Authorization: Bearer $team")" 200
expect "  its item" "$(json 'd["items"][0]["title"]' <"$WORK/body")" "Standup moved"
expect "a token given to a public feed must be valid too" "$(call GET /api/feeds/main/items -H "Authorization: Bearer x.y.z")" 401

# Nothing tells a feed that exists from one that does not.
for who in "" "$carol"; do
    auth=()
    [ -n "$who" ] && auth=(-H "Authorization: Bearer $who")
    label=${who:+with another feed\'s token}
    label=${label:-without a token}
    existing=$(call GET /api/feeds/user:42/items "${auth[@]}")" $(cat "$WORK/body")"
    missing=$(call GET /api/feeds/user:99/items "${auth[@]}")" $(cat "$WORK/body")"
    expect "$label: user:42 (has items) and user:99 (none) are refused alike" "$missing" "$existing"
    existing=$(call GET /api/feeds/user:42 "${auth[@]}")" $(cat "$WORK/body")"
    missing=$(call GET /api/feeds/user:99 "${auth[@]}")" $(cat "$WORK/body")"
    expect "$label: and so are their heads" "$missing" "$existing"
done

# A session belongs to its token's owner.
expect "a session on user:42 without a token is 401" "$(call POST /api/sessions "${JSON_TYPE[@]}" -d '{"feed":"user:42"}')" 401
expect "with alice's token it is 201" \
    "$(call POST /api/sessions "${JSON_TYPE[@]}" -d '{"feed":"user:42"}' -H "Authorization: Bearer $alice")" 201
session=$(json 'd["id"]' <"$WORK/body")
expect "its stream without a token is 401" "$(call GET "/api/sessions/$session/events" --max-time 5)" 401
expect "  with its challenge" "$(challenge)" 'Bearer error="invalid_token"'
expect "with bob's token (he reads user:42, but it is alice's session) 403" \
    "$(call GET "/api/sessions/$session/events" --max-time 5 -H "Authorization: Bearer $bob")" 403
expect "  insufficient_scope" "$(error_code)" insufficient_scope
listen "$session" "$WORK/alice" --cookie "ptr_token=$alice"
expect "with alice's cookie it opens and tells the state" "$(grep -c '^event: state' "$WORK/alice")" 1
expect "samples need the session id alone" "$(call POST "/api/sessions/$session/samples" "${JSON_TYPE[@]}" -d '{"seq":1,"y":0,"phase":"scroll"}')" 200
expect "a session of main without a token opens its stream with its id alone" \
    "$(call POST /api/sessions "${JSON_TYPE[@]}" -d '{}')" 201
listen "$(json 'd["id"]' <"$WORK/body")" "$WORK/public"

# A stream opened with a token ends, cleanly, before the token expires.
short=$(mint HS256 "{\"sub\":\"alice\",\"exp\":$(($(date +%s) + 10)),\"ptr\":{\"read\":[\"user:42\"]}}")
call POST /api/sessions "${JSON_TYPE[@]}" -d '{"feed":"user:42"}' -H "Authorization: Bearer $short" >/dev/null
began=$SECONDS
ended=0
curl -sN --max-time 40 -H "Authorization: Bearer $short" "$BASE/api/sessions/$(json 'd["id"]' <"$WORK/body")/events" >"$WORK/short" || ended=$?
expect "a stream whose token expires in 10 s ends with the chunked body's end (curl exit 0)" "$ended" 0
expect_match "  by its expiry, not curl's 40 s ($((SECONDS - began)) s)" "$((SECONDS - began))" '^([0-9]|1[0-9])$'
expect "  after it opened" "$(grep -c '^event: state' "$WORK/short")" 1

# Tokens that prove nothing.
expired=$(mint HS256 "{\"sub\":\"alice\",\"exp\":$(($(date +%s) - 60)),\"ptr\":{\"read\":[\"user:42\"]}}")
expect "an expired token is 401" "$(call GET /api/feeds/user:42/items -H "Authorization: Bearer $expired")" 401
expect "  invalid_token" "$(error_code)" invalid_token
unsigned=$(mint none '{"sub":"alice","ptr":{"read":["*"]}}')
expect "alg none is 401" "$(call GET /api/feeds/user:42/items -H "Authorization: Bearer $unsigned")" 401
tampered=$(python3 -c 'import base64, json, sys
h, p, s = sys.argv[1].split(".")
claims = json.loads(base64.urlsafe_b64decode(p + "=="))
claims["ptr"]["read"] = ["*"]
print(h + "." + base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode() + "." + s)' "$carol")
expect "a token whose rights were changed after signing is 401" "$(call GET /api/feeds/user:42/items -H "Authorization: Bearer $tampered")" 401
other_kid=$(mint EdDSA '{"sub":"svc","ptr":{"read":["team.*"]}}' '{"kid":"2026-10"}')
expect "a token for a kid the server has not is 401" "$(call GET /api/feeds/team.eng/items -H "Authorization: Bearer $other_kid")" 401
expect "a token in the URL is not read" "$(call GET "/api/feeds/user:42/items?access_token=$bob")" 401
expect "refused: expired" "$(refused expired)" 1
expect "refused: algorithm (none)" "$(refused algorithm)" 1
expect "refused: signature" "$(refused signature)" 1
expect "refused: unknown_key" "$(refused unknown_key)" 1
# A signature is base64url and may start with "-": given with -e, it is never read as an option.
expect "no token is logged" "$(grep -cF -e "${bob##*.}" "$WORK/server.log" || true)" 0

# A key file that is no key stops the start, with one line naming the setting.
kill "$SERVER_PID" && wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
echo short >"$WORK/keys/not-a-key"
exited=0
"$BIN" --port 0 --database :memory: --auth-key "$WORK/keys/not-a-key" >"$WORK/start.out" 2>"$WORK/start.err" || exited=$?
expect "a key file that is no key: exit 78" "$exited" 78
expect "  one line" "$(wc -l <"$WORK/start.err")" 1
expect_match "  naming --auth-key and the file" "$(cat "$WORK/start.err")" "^Error: --auth-key: $WORK/keys/not-a-key is neither"
finish
