// How frames become WebSocket messages: JSON text frames (the default) or
// MessagePack binary frames.

import { VolleyError } from "./errors.js";
import { isFrame, type ClientFrame, type ServerFrame } from "./frames.js";
import { decodeMsgpack, encodeMsgpack } from "./msgpack.js";

export type Encoding = "json" | "msgpack";

export interface Codec {
  readonly name: Encoding;
  encode(frame: ClientFrame): string | Uint8Array;
  decode(data: string | ArrayBuffer | Uint8Array): ServerFrame;
}

function checked(value: unknown): ServerFrame {
  if (!isFrame(value)) throw new VolleyError("protocol", "the server sent something that is not a frame");
  return value;
}

export const jsonCodec: Codec = {
  name: "json",
  encode: (frame) => JSON.stringify(frame),
  decode(data) {
    const text = typeof data === "string" ? data : new TextDecoder().decode(data);
    try {
      return checked(JSON.parse(text));
    } catch (e) {
      if (e instanceof VolleyError) throw e;
      throw new VolleyError("protocol", "the server sent malformed JSON");
    }
  },
};

export const msgpackCodec: Codec = {
  name: "msgpack",
  encode: (frame) => encodeMsgpack(frame),
  decode(data) {
    if (typeof data === "string") throw new VolleyError("protocol", "a text frame on a MessagePack connection");
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    return checked(decodeMsgpack(bytes));
  },
};

export function codecFor(encoding: Encoding): Codec {
  return encoding === "msgpack" ? msgpackCodec : jsonCodec;
}

/** The size a sent message takes on the wire, for back-pressure accounting. */
export function encodedSize(data: string | Uint8Array): number {
  return typeof data === "string" ? data.length : data.byteLength;
}
