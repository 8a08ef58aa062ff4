// The frames of the volley web protocol, version 1 (docs/web-protocol.md).
// Every frame is an object with a `t` tag; server frames other than
// `welcome` and `pong` carry a per-session `seq`, starting at 1.

export const PROTOCOL_VERSION = 1;

export interface HelloFrame {
  t: "hello";
  v: number;
  token?: string;
  resume?: string;
  last_seq?: number;
}
export interface TellFrame {
  t: "tell";
  service: string;
  msg: unknown;
}
export interface AskFrame {
  t: "ask";
  id: number;
  service: string;
  msg: unknown;
  timeout_ms?: number;
}
export interface SubFrame {
  t: "sub" | "unsub";
  topic: string;
}
export interface AckFrame {
  t: "ack";
  seq: number;
}
export interface PingFrame {
  t: "ping";
  n: number;
}
export interface PongFrame {
  t: "pong";
  n: number;
}

export type ClientFrame = HelloFrame | TellFrame | AskFrame | SubFrame | AckFrame | PingFrame | PongFrame;

export interface WelcomeFrame {
  t: "welcome";
  v: number;
  session: string;
  resumed: boolean;
  heartbeat_ms?: number;
  max_frame?: number;
}
export interface ReplyFrame {
  t: "reply";
  seq?: number;
  id: number;
  msg: unknown;
}
export interface ErrorFrame {
  t: "error";
  seq?: number;
  id?: number | null;
  code: string;
  text?: string;
}
export interface PubFrame {
  t: "pub";
  seq?: number;
  topic: string;
  msg: unknown;
}
export interface PushFrame {
  t: "push";
  seq?: number;
  to: string;
  msg: unknown;
}

export type ServerFrame = WelcomeFrame | ReplyFrame | ErrorFrame | PubFrame | PushFrame | PingFrame | PongFrame;

/** Whether a decoded value looks like a server frame (an object with a string `t`). */
export function isFrame(value: unknown): value is ServerFrame {
  return typeof value === "object" && value !== null && typeof (value as { t?: unknown }).t === "string";
}
