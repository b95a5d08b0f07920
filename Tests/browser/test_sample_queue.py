"""The page's `SampleQueue` (session.js) walks the shared table of cases,
`Tests/fixtures/sample-queue-cases.json`, which the Swift client's queue walks too
(`Tests/RefreshClientTests/SampleQueueTests.swift`): the rule is stated once, in
`Sources/RefreshClient/SampleQueue.swift`, and a case either implementation fails fails.

It runs inside Chromium with requests whose answers the test gives by hand and a clock the
test moves (the queue takes its clock and timers as an option), so no outcome depends on the
machine's speed: "at once" is "before the next task", which a loaded machine cannot stretch,
and "later" is a timer that fires only when the test moves the clock past it."""

import json
import pathlib

import pytest

from harness import make_driver

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = json.loads((ROOT / "Tests" / "fixtures" / "sample-queue-cases.json").read_text())

WALK = """
const table = arguments[0];
const done = arguments[arguments.length - 1];
(async () => {
const { SampleQueue, ThresholdWatch, MAX_IN_FLIGHT } = await import('/pull-to-refresh/session.js');
// Past the microtasks of this task: what the queue sends "at once" has gone by then.
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A clock the test moves: its timers fire in the order they are due, each at its time. */
class Clock {
    t = 0;
    timers = [];
    ids = 0;
    now = () => this.t;
    setTimeout = (callback, ms) => {
        const id = ++this.ids;
        this.timers.push({ id, due: this.t + Math.max(0, ms), callback });
        return id;
    };
    clearTimeout = (id) => {
        this.timers = this.timers.filter((timer) => timer.id !== id);
    };
    async pass(ms) {
        const target = this.t + ms;
        for (;;) {
            const next = this.timers.filter((timer) => timer.due <= target).sort((a, b) => a.due - b.due || a.id - b.id)[0];
            if (!next) break;
            this.clearTimeout(next.id);
            this.t = next.due;
            next.callback();
            await settle();
        }
        this.t = target;
    }
}

const PHASES = ['drag', 'release', 'scroll'];
const HEIGHTS = ['contentHeight', 'viewportHeight'];
const sample = (spec) => {
    const phase = PHASES.find((name) => name in spec);
    const made = { y: spec[phase], phase };
    for (const key of HEIGHTS) if (key in spec) made[key] = spec[key];
    return made;
};
const spec = (sent) => {
    const made = { seq: sent.seq, [sent.phase]: sent.y };
    for (const key of HEIGHTS) if (sent[key] != null) made[key] = sent[key];
    return made;
};

async function walk(testCase) {
    const config = testCase.config ?? table.config;
    const clock = new Clock();
    const requests = [];
    let sent = [];
    const send = (samples, slot) => new Promise((resolve) => {
        requests.push({ resolve, answered: false });
        sent.push({ [slot]: samples.map(spec) });
    });
    const answer = (number, wait) => {
        const request = requests[number - 1];
        request.answered = true;
        request.resolve(wait);
    };
    const queue = new SampleQueue(send, { config, clock });
    const results = [];
    for (const step of testCase.steps) {
        sent = [];
        const result = {};
        if ('push' in step) result.seqs = step.push.map((pushed) => queue.push(sample(pushed)));
        else if ('time' in step) await clock.pass(step.time);
        else if ('taken' in step) answer(step.taken, undefined);
        else if ('notNow' in step) answer(step.notNow, step.ms);
        else if ('reset' in step) queue.reset(step.config ?? config);
        await settle();
        result.sent = sent;
        result.out = requests.filter((request) => !request.answered).length;
        result.empty = queue.isEmpty;
        results.push(result);
    }
    return results;
}

const cases = {};
for (const testCase of table.cases) cases[testCase.name] = await walk(testCase);
const watch = {};
for (const { name, config, samples } of table.watch) {
    const watching = new ThresholdWatch(config);
    watch[name] = samples.map((pushed) => watching.crosses(sample(pushed)));
}
return { cases, watch, maxInFlight: MAX_IN_FLIGHT };
})().then(done, (error) => done({ error: String(error && error.stack || error) }));
"""


@pytest.fixture(scope="module")
def walked(server):
    """Every case walked once, in one page."""
    driver = make_driver(390, 844)
    try:
        driver.get(server + "/")
        result = driver.execute_async_script(WALK, TABLE)
    finally:
        driver.quit()
    assert "error" not in result, result.get("error")
    return result


def test_three_paced_requests_leave_a_connection_for_the_crossing_and_one_for_the_release(walked):
    assert walked["maxInFlight"] == 3


@pytest.mark.parametrize("case", TABLE["cases"], ids=[case["name"] for case in TABLE["cases"]])
def test_the_page_queue_walks_the_shared_case(walked, case):
    results = walked["cases"][case["name"]]
    assert len(results) == len(case["steps"])
    for number, (step, result) in enumerate(zip(case["steps"], results), start=1):
        at = f"step {number}: {json.dumps({k: v for k, v in step.items() if k not in ('sent', 'seqs', 'out', 'empty')})}"
        assert result["sent"] == step.get("sent", []), at
        if "seqs" in step:
            assert result["seqs"] == step["seqs"], at
        if "out" in step:
            assert result["out"] == step["out"], at
        if "empty" in step:
            assert result["empty"] == step["empty"], at


@pytest.mark.parametrize("case", TABLE["watch"], ids=[case["name"] for case in TABLE["watch"]])
def test_the_threshold_watch_judges_sides_as_the_server_does(walked, case):
    assert walked["watch"][case["name"]] == case["crosses"]
