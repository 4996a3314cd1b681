/**
 * Reads a `text/event-stream` body (the Server-Sent Events wire format) into events, as a browser's
 * EventSource would: `event:`, `data:` (lines joined by "\n"), `id:`; comments and `retry:` are
 * skipped; an event without data is not dispatched.
 */

/** One event as it came over the wire (`data` is the raw text). */
export interface RawSseEvent {
  /** The last id seen on the stream so far (ids carry over to events without one). */
  id: string | undefined;
  event: string;
  data: string;
}

/** The events of `body`, in order, until it ends. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<RawSseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let lastId: string | undefined;
  let event = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/\r\n|\r|\n/);
        // A lone "\r" at the end may be the first half of "\r\n": wait for more.
        if (end < 0 || (end === buffer.length - 1 && buffer[end] === "\r" && !done)) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { id: lastId, event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? "" : line.slice(colon + 1);
        if (text.startsWith(" ")) text = text.slice(1);
        if (field === "event") event = text;
        else if (field === "data") data.push(text);
        else if (field === "id" && !text.includes("\0")) lastId = text;
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
