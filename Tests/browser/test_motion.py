"""The list's spring (`Spring` in gesture.js), run frame by frame on a clock of the test's
own inside Chromium: it settles where it is sent, and never passes its target, even when a
new target comes while it is moving fast, as a refresh that starts late does."""

SCENARIO = """
const done = arguments[arguments.length - 1];
const { Spring } = await import('/pull-to-refresh/gesture.js');
// A clock and frames of our own: every frame 1/60 s later.
let now = 0;
const frames = [];
const realNow = performance.now.bind(performance);
const realFrame = window.requestAnimationFrame;
performance.now = () => now;
window.requestAnimationFrame = (callback) => frames.push(callback);
const run = (ms) => {
    const end = now + ms;
    while (now < end && frames.length) {
        now += 1000 / 60;
        frames.shift()(now);
    }
};
try {
    const drawn = [];
    const spring = new Spring((value) => drawn.push(value));
    spring.jump(124);
    spring.moveTo(0);
    run(arguments[0]);
    const at = spring.value;
    // Stopped where it has got to, on its way down at full speed.
    spring.moveTo(Math.min(50, at));
    run(2000);
    done({ at, drawn, moving: spring.moving, value: spring.value });
} finally {
    performance.now = realNow;
    window.requestAnimationFrame = realFrame;
}
"""


def test_the_spring_settles_on_a_new_target_without_passing_it(server, phone):
    phone.get(server + "/")
    for after in (50, 150, 300):
        result = phone.execute_async_script("(async () => {" + SCENARIO + "})()", after)
        drawn = result["drawn"]
        rises = [b - a for a, b in zip(drawn, drawn[1:]) if b > a + 1e-9]
        assert rises == [], f"moved back up after {after} ms"
        assert not result["moving"] and abs(result["value"] - min(50, result["at"])) < 0.3
        assert min(drawn) >= min(50, result["at"]) - 0.3, "it passed its target"
