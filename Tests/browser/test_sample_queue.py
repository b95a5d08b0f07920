"""When `SampleQueue` (session.js) sends a sample, run inside Chromium with requests whose
answers the test gives by hand: a sample that crosses a threshold goes out in the same task
it was posted in, past the pacing, in a slot of its own or else the next paced one free;
with a release, never more than five requests out, which with the event stream is the six
connections HTTP/1.1 gives a page. No clock enters it: "at once" is "before the next
task", which a loaded machine cannot stretch."""

SCENARIO = """
const done = arguments[arguments.length - 1];
const { SampleQueue, ThresholdWatch, MAX_IN_FLIGHT } = await import('/pull-to-refresh/session.js');
const out = [];          // requests not yet answered: {ys, answer}
const sent = [];         // every request, in order: the offsets it carried
let most = 0;
const send = (samples) => new Promise((resolve) => {
    const request = { ys: samples.map((s) => s.phase === 'release' ? 'release' : s.y), answer: resolve };
    out.push(request);
    sent.push(request.ys);
    most = Math.max(most, out.length);
});
const answer = (index) => out.splice(index, 1)[0]?.answer(undefined);
// Past the microtasks of this task: what the queue sends "at once" has gone by then.
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
const watch = new ThresholdWatch({ top: { enabled: true, threshold: 80 }, bottom: { enabled: false }, baseline: 'zero' });
const queue = new SampleQueue(send, { crosses: (sample) => watch.crosses(sample) });
const steps = [];
const step = async (name, ...samples) => {
    for (const sample of samples) queue.push(sample);
    await Promise.resolve();
    await Promise.resolve();
    steps.push([name, sent.length, out.length]);
};
const drag = (y) => ({ y, phase: 'drag' });
await step('first', drag(-10));
// Pushed in the same task as the first went out: its turn has not come.
await step('paced', drag(-20));
// Crosses 80 going down: it replaces the queued one and goes now.
await step('crossing', drag(-85));
await step('past', drag(-90));
// Back under while the crossing's slot is out: the next paced slot free, at once.
await step('back', drag(-70));
await step('again', drag(-95));
// Every paced slot and the crossing's are out: it waits for one to free.
await step('full', drag(-60));
answer(1); // the crossing's request
await settle();
steps.push(['freed', sent.length, out.length]);
// The release goes whatever is out, with where the list rests, in one request.
queue.push({ y: -60, phase: 'release' });
queue.push({ y: 0, phase: 'scroll' });
await settle();
steps.push(['release', sent.length, out.length]);
done({ steps, sent, most, maxInFlight: MAX_IN_FLIGHT });
"""


def test_a_sample_that_crosses_a_threshold_goes_out_at_once_within_the_connections(server, phone):
    phone.get(server + "/")
    result = phone.execute_async_script("(async () => {" + SCENARIO + "})()")
    steps = {name: (sent, out) for name, sent, out in result["steps"]}
    sent = result["sent"]
    print("\n" + "\n".join(f"{name}: {count} sent, {out} out" for name, count, out in result["steps"]))
    assert result["maxInFlight"] == 3
    assert steps["first"] == (1, 1)
    assert steps["paced"] == (1, 1), "a position waits for its turn"
    assert steps["crossing"] == (2, 2) and sent[1] == [-85], "the crossing replaced the queued one and went at once"
    assert steps["past"] == (2, 2), "the next position waits for its turn again"
    assert steps["back"] == (3, 3) and sent[2] == [-70], "back under the threshold goes at once too"
    assert steps["again"] == (4, 4) and sent[3] == [-95]
    assert steps["full"] == (4, 4), "no slot free: it waits"
    assert steps["freed"] == (5, 4) and sent[4] == [-60], "it went as soon as the crossing's slot was free"
    assert steps["release"] == (6, 5) and sent[5] == ["release", 0]
    assert result["most"] == 5, "three paced, the crossing's and the release: with the stream, six connections"



REFUSED = """
const done = arguments[arguments.length - 1];
const { SampleQueue, ThresholdWatch } = await import('/pull-to-refresh/session.js');
const out = [];
const sent = [];
const send = (samples) => new Promise((resolve) => {
    out.push({ answer: resolve });
    sent.push(samples.map((s) => s.y));
});
// An answer of a number is the server's "not now, ask again in that many ms" (a 429).
const answer = (index, wait) => out.splice(index, 1)[0].answer(wait);
const settle = () => new Promise((resolve) => setTimeout(resolve, 10));
const watch = new ThresholdWatch({ top: { enabled: true, threshold: 80 }, bottom: { enabled: false }, baseline: 'zero' });
const queue = new SampleQueue(send, { crosses: (sample) => watch.crosses(sample) });
const drag = (y) => ({ y, phase: 'drag' });
const push = async (y) => { queue.push(drag(y)); await Promise.resolve(); await Promise.resolve(); };
await push(-10);   // paced
await push(-85);   // the crossing's slot
await push(-70);   // back under: the next paced slot
await push(-95);   // the last paced slot
answer(1);         // the crossing's slot is free again
await settle();
await push(-70);   // back under: the crossing's slot
const before = sent.length;
answer(3, 0);      // turned away, to be asked again at once
await settle();
done({ sent, before, after: sent.length, out: out.length });
"""


def test_a_crossing_turned_away_goes_first_once_the_wait_is_over(server, phone):
    """Every paced slot is out when the server turns a crossing away: after the wait it goes
    in its own slot again, not behind the paced requests (which may take a round trip)."""
    phone.get(server + "/")
    result = phone.execute_async_script("(async () => {" + REFUSED + "})()")
    print(f"\nsent {result['sent']}")
    assert result["before"] == 5 and result["sent"][4] == [-70]
    assert result["after"] == 6, "the refused crossing went again without waiting for a paced slot"
    assert result["sent"][5] == [-70]

WATCH = """
const { ThresholdWatch } = await import('/pull-to-refresh/session.js');
const run = (config, samples) => { const w = new ThresholdWatch(config); return samples.map((s) => w.crosses(s)); };
const bottom = { top: { enabled: true, threshold: 80 }, bottom: { enabled: true, threshold: 120 }, baseline: 'zero' };
const heights = { contentHeight: 2000, viewportHeight: 800 };
return {
    top: run(bottom, [{ y: -79 }, { y: -80 }, { y: -100 }, { y: -79.5 }, { y: 0 }]),
    // maxY = 1200: the bottom threshold is at 1320.
    bottom: run(bottom, [{ y: 1200, ...heights }, { y: 1319 }, { y: 1320 }, { y: 1400 }, { y: 1300 }]),
    // Content shorter than the viewport: no bottom edge.
    short: run(bottom, [{ y: 300, contentHeight: 500, viewportHeight: 800 }]),
    // ios15: the first offset is the rest position.
    ios15: run({ top: { enabled: true, threshold: 145 }, baseline: 'firstSample' }, [{ y: 40 }, { y: -100 }, { y: -105 }, { y: -110 }]),
    off: run({ top: { enabled: false, threshold: 80 }, baseline: 'zero' }, [{ y: -200 }]),
};
"""


def test_the_threshold_watch_judges_sides_as_the_server_does(server, phone):
    phone.get(server + "/")
    result = phone.execute_async_script("const done = arguments[0]; (async () => {" + WATCH + "})().then(done)")
    assert result["top"] == [False, True, False, True, False]
    assert result["bottom"] == [False, False, True, False, True]
    assert result["short"] == [False]
    assert result["ios15"] == [False, False, True, False]
    assert result["off"] == [False]
