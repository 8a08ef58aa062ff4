/**
 * Why a call failed. Server codes (docs/web-protocol.md): `bad_frame`,
 * `unknown_service`, `bad_message`, `timeout`, `unauthorized`, `overloaded`,
 * `too_large`, `internal`. Client codes: `timeout` (no reply in time),
 * `closed` (the client was closed), `backpressure` (the send buffer stayed
 * above its high-water mark), `queue_full` (too many sends waiting for a
 * connection), `protocol` (the server broke the protocol), `refused`
 * (the server refused the connection for good: auth, origin, version).
 */
export type ErrorCode =
  | "bad_frame"
  | "unknown_service"
  | "bad_message"
  | "timeout"
  | "unauthorized"
  | "overloaded"
  | "too_large"
  | "internal"
  | "closed"
  | "backpressure"
  | "queue_full"
  | "protocol"
  | "refused"
  | (string & {});

export class VolleyError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = "VolleyError";
    this.code = code;
  }
}
