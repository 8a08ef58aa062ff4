// The client's options, their defaults, and the reconnect back-off.

import type { Encoding } from "./codec.js";
import type { ConnectionFactory } from "./connection.js";
import type { FetchLike } from "./longpoll.js";
import type { WebSocketConstructor } from "./websocket.js";

export interface ReconnectOptions {
  /** The first delay before reconnecting, in ms (default 250). */
  initialDelayMs?: number;
  /** The longest delay, in ms (default 10000). */
  maxDelayMs?: number;
  /** Attempts in a row before giving up and closing (default: no limit). */
  maxAttempts?: number;
}

export interface ConnectOptions {
  /** Handed to the server's auth hook in the hello. */
  token?: string;
  /** `json` (default) or `msgpack` (binary frames; WebSocket only, long-poll stays JSON). */
  encoding?: Encoding;
  /** `auto` (default): WebSocket, falling back to long-poll when it cannot connect; or one of them only. */
  transport?: "auto" | "websocket" | "longpoll";
  /** The default timeout of an ask, in ms (default 10000). */
  requestTimeoutMs?: number;
  /** How long connect() waits for the first welcome, in ms (default 10000). */
  connectTimeoutMs?: number;
  /** Ping interval in ms; by default the server's `heartbeat_ms` from the welcome (else 15000). */
  heartbeatMs?: number;
  /** Pings left unanswered (no frame at all received) before the connection counts as dead (default 2). */
  maxMissedPongs?: number;
  /** Reconnect settings, or false to close the client when the connection drops. */
  reconnect?: ReconnectOptions | false;
  /** Bytes buffered by the transport above which sends hold back (default 1 MiB). */
  highWaterMark?: number;
  /** Above the high-water mark: `wait` (default) until it drains, or `reject` at once. */
  backpressure?: "wait" | "reject";
  /** How long a tell may wait, for a connection or for the buffer to drain, in ms (default 10000). */
  sendTimeoutMs?: number;
  /** Tells and asks waiting to be written, at most (default 1000); more are rejected with `queue_full`. */
  maxQueued?: number;
  /** The WebSocket implementation (default: the global one). */
  WebSocket?: WebSocketConstructor;
  /** The fetch implementation for long-poll (default: the global one). */
  fetch?: FetchLike;
  /** Replaces the built-in transports (tests). */
  connectionFactory?: ConnectionFactory;
}

export interface ResolvedOptions {
  token?: string;
  encoding: Encoding;
  transport: "auto" | "websocket" | "longpoll";
  requestTimeoutMs: number;
  connectTimeoutMs: number;
  heartbeatMs?: number;
  maxMissedPongs: number;
  reconnect: Required<ReconnectOptions> | false;
  highWaterMark: number;
  backpressure: "wait" | "reject";
  sendTimeoutMs: number;
  maxQueued: number;
  WebSocket?: WebSocketConstructor;
  fetch?: FetchLike;
  connectionFactory?: ConnectionFactory;
}

export function resolveOptions(o: ConnectOptions): ResolvedOptions {
  const reconnect =
    o.reconnect === false
      ? false
      : {
          initialDelayMs: o.reconnect?.initialDelayMs ?? 250,
          maxDelayMs: o.reconnect?.maxDelayMs ?? 10_000,
          maxAttempts: o.reconnect?.maxAttempts ?? Infinity,
        };
  return {
    ...o,
    encoding: o.encoding ?? "json",
    transport: o.transport ?? "auto",
    requestTimeoutMs: o.requestTimeoutMs ?? 10_000,
    connectTimeoutMs: o.connectTimeoutMs ?? 10_000,
    maxMissedPongs: o.maxMissedPongs ?? 2,
    reconnect,
    highWaterMark: o.highWaterMark ?? 1 << 20,
    backpressure: o.backpressure ?? "wait",
    sendTimeoutMs: o.sendTimeoutMs ?? 10_000,
    maxQueued: o.maxQueued ?? 1000,
  };
}

/**
 * The delay before reconnect attempt `attempt` (0-based): exponential, capped,
 * with "equal jitter" (half fixed, half random) so that clients dropped
 * together do not come back together.
 */
export function backoffDelay(attempt: number, r: Required<ReconnectOptions>, random: () => number = Math.random): number {
  const ceiling = Math.min(r.maxDelayMs, r.initialDelayMs * 2 ** Math.min(attempt, 30));
  return ceiling / 2 + random() * (ceiling / 2);
}

/** The gateway's base URL with an http(s) scheme and no trailing slash. */
export function baseUrlOf(url: string): string {
  const base = (globalThis as { location?: { href: string } }).location?.href;
  const u = new URL(url, base);
  if (u.protocol === "ws:") u.protocol = "http:";
  if (u.protocol === "wss:") u.protocol = "https:";
  u.search = "";
  u.hash = "";
  return u.toString().replace(/\/+$/, "");
}
