// One transport-level connection to the gateway. The client drives the
// protocol (welcome, seq, acks, heartbeats); a connection only moves frames
// and says when it is gone. Tests supply their own through
// `ConnectOptions.connectionFactory`.

import type { ClientFrame, HelloFrame, ServerFrame } from "./frames.js";

export type TransportKind = "websocket" | "longpoll";

export interface CloseInfo {
  /** A WebSocket close code, or the matching one for a long-poll status (docs/web-protocol.md). */
  code: number;
  reason: string;
  /** Whether the transport connected at all (the WebSocket opened, the long-poll open answered). */
  reached: boolean;
}

export interface Connection {
  /** Connects and sends the hello; every frame received goes to `onframe`, the end to `onclose` (once). */
  start(hello: HelloFrame): void;
  /** Writes a frame; throws a `too_large` VolleyError for a frame over `maxFrame`, sending nothing. */
  send(frame: ClientFrame): void;
  /** The largest frame the server takes, from its welcome (0 until then: unchecked). */
  maxFrame: number;
  /** Bytes handed to the transport and not yet written out. */
  readonly bufferedAmount: number;
  /** Closes without a further `onclose`. `final` ends the server's session for good. */
  close(final: boolean): void;
  onframe: (frame: ServerFrame) => void;
  onclose: (info: CloseInfo) => void;
}

export interface ConnectionTarget {
  kind: TransportKind;
  /** The gateway's base URL, http(s) scheme, no trailing slash. */
  baseUrl: string;
  encoding: "json" | "msgpack";
}

export type ConnectionFactory = (target: ConnectionTarget) => Connection;

/**
 * Close codes after which reconnecting would be refused the same way
 * (auth, origin), or would steal the session from the connection that
 * resumed it (4409).
 */
export const FATAL_CLOSE_CODES: ReadonlySet<number> = new Set([4401, 4403, 4409]);

/** Close codes by which the server says the session has ended: the next connection starts a new one. */
export const SESSION_ENDED_CODES: ReadonlySet<number> = new Set([1000, 1001, 4429]);
