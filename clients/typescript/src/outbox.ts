// Frames waiting to be written: while there is no connection, and while the
// transport's buffer is above the high-water mark (back-pressure). WebSocket
// has no "drained" event, so a full buffer is polled.

import { VolleyError } from "./errors.js";
import type { ClientFrame } from "./frames.js";

export interface Writable {
  readonly bufferedAmount: number;
  send(frame: ClientFrame): void;
}

interface Entry {
  frame: () => ClientFrame;
  /** When to give up (ms since the epoch); none for asks, whose own timeout removes them. */
  deadline: number | null;
  resolve: () => void;
  reject: (e: VolleyError) => void;
  key?: number;
}

const DRAIN_POLL_MS = 10;

export class Outbox {
  private items: Entry[] = [];
  private target: Writable | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly highWaterMark: number,
    private readonly maxQueued: number,
  ) {}

  get length(): number {
    return this.items.length;
  }

  /** Whether a send now would have to wait for the buffer to drain. */
  get congested(): boolean {
    return this.target !== null && (this.items.length > 0 || this.target.bufferedAmount > this.highWaterMark);
  }

  has(key: number): boolean {
    return this.items.some((e) => e.key === key);
  }

  /** Where frames go from now on; null while disconnected. */
  attach(target: Writable | null): void {
    this.target = target;
    this.pump();
  }

  /**
   * Queues a frame, built when it is written (an ask's remaining timeout is
   * computed then). `front` puts it ahead of the queue and past its bound
   * (asks resent after a reconnect).
   */
  push(frame: () => ClientFrame, opts: { deadline: number | null; key?: number; front?: boolean }): Promise<void> {
    if (!opts.front && this.items.length >= this.maxQueued) {
      return Promise.reject(new VolleyError("queue_full", `${this.maxQueued} sends already wait to be written`));
    }
    return new Promise((resolve, reject) => {
      const entry: Entry = { frame, deadline: opts.deadline, resolve, reject, key: opts.key };
      if (opts.front) this.items.unshift(entry);
      else this.items.push(entry);
      this.pump();
    });
  }

  /** Drops the entry with this key (an ask that timed out) without settling it. */
  remove(key: number): void {
    this.items = this.items.filter((e) => e.key !== key);
  }

  rejectAll(error: VolleyError): void {
    const items = this.items;
    this.items = [];
    this.clearTimer();
    for (const e of items) e.reject(error);
  }

  private pump(): void {
    this.clearTimer();
    this.expire(Date.now());
    const target = this.target;
    while (target && this.items.length > 0 && target.bufferedAmount <= this.highWaterMark) {
      const entry = this.items.shift()!;
      try {
        target.send(entry.frame());
        entry.resolve();
      } catch (e) {
        entry.reject(e instanceof VolleyError ? e : new VolleyError("bad_message", String(e)));
      }
    }
    this.schedule();
  }

  private expire(now: number): void {
    const overdue = this.items.filter((e) => e.deadline !== null && e.deadline <= now);
    if (overdue.length === 0) return;
    this.items = this.items.filter((e) => !overdue.includes(e));
    const error = this.target
      ? new VolleyError("backpressure", "the send buffer stayed above its high-water mark")
      : new VolleyError("timeout", "no connection to send on in time");
    for (const e of overdue) e.reject(error);
  }

  private schedule(): void {
    if (this.items.length === 0) return;
    let delay: number | null = this.target ? DRAIN_POLL_MS : null;
    for (const e of this.items) {
      if (e.deadline !== null) delay = Math.min(delay ?? Infinity, Math.max(0, e.deadline - Date.now()));
    }
    if (delay !== null) this.timer = setTimeout(() => this.pump(), delay);
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
