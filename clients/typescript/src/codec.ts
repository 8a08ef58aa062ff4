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

const utf8 = new TextEncoder();

/** The bytes a message takes on the wire (UTF-8 for text). */
export function encodedSize(data: string | Uint8Array): number {
  return typeof data === "string" ? utf8.encode(data).byteLength : data.byteLength;
}

/**
 * Refuses a message the server would refuse: over its `max_frame` it
 * closes the connection (1009), and a client that resent the frame after
 * resuming would be closed again, forever.
 */
export function checkFrameSize(data: string | Uint8Array, maxFrame: number): void {
  if (maxFrame <= 0) return;
  // A UTF-8 character takes at most 3 bytes per UTF-16 unit: most frames need no count.
  if (typeof data === "string" && data.length * 3 <= maxFrame) return;
  const size = encodedSize(data);
  if (size > maxFrame) throw new VolleyError("too_large", `a frame of ${size} bytes is over the server's max_frame of ${maxFrame}`);
}
