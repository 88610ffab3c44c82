import { createRunClock } from '../src/transform/thread';

// The transform's time limit counts time it ran, not time its thread waited for a core. The clocks
// are driven by hand here; test/transform-sandbox.test.ts runs the real thread against a real loop.
describe("a transform call's time limit", () => {
  function clocks() {
    const c = { wall: 0, cpu: 0 };
    return { c, now: () => c.wall, cpuMs: () => c.cpu };
  }
  /** Advances the wall clock in 1 ms steps, asking the clock each step as QuickJS's interrupt does; the CPU runs `share` of the time. */
  function run(
    clock: ReturnType<typeof createRunClock>,
    c: { wall: number; cpu: number },
    ms: number,
    share: number,
  ): number | undefined {
    for (let i = 0; i < ms; i++) {
      c.wall += 1;
      c.cpu += share;
      if (clock.expired()) return c.wall;
    }
    return undefined;
  }

  it('stops a call that ran for the whole limit, at the limit', () => {
    const { c, now, cpuMs } = clocks();
    const clock = createRunClock(50, now, cpuMs);
    clock.start();
    expect(run(clock, c, 500, 1)).toBe(51);
  });

  it('gives a call that waited for a core more windows, and stops it once it runs that long', () => {
    const { c, now, cpuMs } = clocks();
    const clock = createRunClock(50, now, cpuMs);
    clock.start();
    // Starved: 5 % of a core for 300 ms of wall time, never stopped.
    expect(run(clock, c, 300, 0.05)).toBeUndefined();
    // Then it runs flat out: stopped within one window (25 ms) and a step.
    const stoppedAt = run(clock, c, 500, 1)!;
    expect(stoppedAt).toBeGreaterThan(300);
    expect(stoppedAt).toBeLessThanOrEqual(300 + 2 * 25 + 1);
  });

  it('stops a starved call anyway once it has waited the margin past its limit, and takes a limit per call', () => {
    const { c, now, cpuMs } = clocks();
    const clock = createRunClock(50, now, cpuMs, 500);
    clock.start();
    expect(run(clock, c, 2000, 0.05)).toBe(551);
    expect(clock.stopped()).toBe(true);
    clock.stop();
    expect(clock.stopped()).toBe(false);
    clock.start(1000);
    expect(run(clock, c, 5000, 1)).toBe(c.wall);
    expect(c.wall - 551).toBe(1001);
  });

  it('counts wall-clock time where the CPU time is unknown, and nothing while no call runs', () => {
    const { c, now } = clocks();
    const clock = createRunClock(50, now, undefined);
    clock.start();
    expect(run(clock, c, 500, 0)).toBe(51);
    clock.stop();
    expect(run(clock, c, 500, 1)).toBeUndefined();
  });

  it('uses windows of at least 20 ms, so a short limit is judged on whole clock ticks', () => {
    const { c, now, cpuMs } = clocks();
    const clock = createRunClock(5, now, cpuMs);
    clock.start();
    // The CPU clock moves in 10 ms ticks: reading it over a 2.5 ms window would say "did not run".
    let cpu = 0;
    const ticking = () => Math.floor(cpu / 10) * 10;
    const tickClock = createRunClock(5, now, ticking);
    tickClock.start();
    let stopped: number | undefined;
    for (let i = 0; i < 500 && stopped === undefined; i++) {
      c.wall += 1;
      cpu += 1;
      if (tickClock.expired()) stopped = c.wall;
    }
    expect(stopped).toBeDefined();
    expect(stopped!).toBeLessThanOrEqual(5 + 20 + 20 + 1);
    expect(run(clock, c, 100, 1)).toBeDefined();
  });
});
