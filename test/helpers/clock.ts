import type { Clock } from '../../src/lib/clock.js'

/** A clock tests can move forward; it starts at the real time. */
export class TestClock implements Clock {
  private offsetMs = 0
  now(): Date {
    return new Date(Date.now() + this.offsetMs)
  }
  advance(ms: number): void {
    this.offsetMs += ms
  }
}
