// The WebSocket transport: one protocol frame per WebSocket message, text
// for JSON, binary for MessagePack.

import { checkFrameSize, codecFor } from "./codec.js";
import type { CloseInfo, Connection, ConnectionTarget } from "./connection.js";
import { VolleyError } from "./errors.js";
import type { ClientFrame, HelloFrame, ServerFrame } from "./frames.js";

/** The part of the WHATWG WebSocket that the client uses. */
export interface WebSocketLike {
  binaryType: string;
  readonly bufferedAmount: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export function webSocketUrl(target: ConnectionTarget): string {
  return `${target.baseUrl.replace(/^http/, "ws")}/ws?enc=${target.encoding}`;
}

export class WebSocketConnection implements Connection {
  onframe: (frame: ServerFrame) => void = () => {};
  onclose: (info: CloseInfo) => void = () => {};
  maxFrame = 0;
  private socket: WebSocketLike | null = null;
  private reached = false;
  private ended = false;
  private readonly codec;

  constructor(
    private readonly target: ConnectionTarget,
    private readonly WebSocketImpl: WebSocketConstructor,
  ) {
    this.codec = codecFor(target.encoding);
  }

  get bufferedAmount(): number {
    return this.socket?.bufferedAmount ?? 0;
  }

  start(hello: HelloFrame): void {
    let socket: WebSocketLike;
    try {
      socket = new this.WebSocketImpl(webSocketUrl(this.target));
    } catch (e) {
      queueMicrotask(() => this.end({ code: 1006, reason: String(e), reached: false }));
      return;
    }
    this.socket = socket;
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      this.reached = true;
      this.send(hello);
    };
    socket.onmessage = (ev) => this.receive(ev.data);
    socket.onclose = (ev) => this.end({ code: ev.code, reason: ev.reason, reached: this.reached });
    // An error is always followed by a close event, which reports it.
    socket.onerror = () => {};
  }

  private receive(data: unknown): void {
    if (this.ended) return;
    let frame: ServerFrame;
    try {
      frame = this.codec.decode(data as string | ArrayBuffer);
    } catch (e) {
      const reason = e instanceof VolleyError ? e.message : String(e);
      this.socket?.close(4400, "bad frame from server");
      this.end({ code: 4400, reason, reached: true });
      return;
    }
    this.onframe(frame);
  }

  send(frame: ClientFrame): void {
    const data = this.codec.encode(frame);
    checkFrameSize(data, this.maxFrame);
    this.socket?.send(data);
  }

  close(final: boolean): void {
    this.ended = true;
    const socket = this.socket;
    if (!socket) return;
    socket.onmessage = null;
    socket.onclose = null;
    // 1000 tells the gateway the session is over; 4000 (any other code)
    // leaves it to wait for a resume within its grace period.
    try {
      socket.close(final ? 1000 : 4000, final ? "client closed" : "client reconnecting");
    } catch {
      // Closing a socket that never opened may throw in some runtimes; it is gone either way.
    }
  }

  private end(info: CloseInfo): void {
    if (this.ended) return;
    this.ended = true;
    this.onclose(info);
  }
}
