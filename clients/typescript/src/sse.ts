/** Server-sent events read from a fetch body (the follow streams of handoffs and of the log). */

/** One server-sent event: its name (`message` when none is given), its data lines joined, and its id. */
export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * The events of a `text/event-stream` body, in order; comments (the
 * server's `: keep-alive`) are skipped. Stopping the iteration cancels the
 * body, which closes the connection.
 */
export async function* serverSentEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ServerSentEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "message";
  let id: string | undefined;
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      // A `\r` at the end may be the first half of a `\r\n`: it waits for the next chunk.
      const cut = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length;
      const lines = buffer.slice(0, cut).split(/\r\n|\n|\r/);
      // The last piece is a line not yet ended.
      buffer = (lines.pop() ?? "") + buffer.slice(cut);
      for (const line of lines) {
        if (line === "") {
          if (data.length > 0) yield { event, data: data.join("\n"), id };
          event = "message";
          data = [];
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const name = colon < 0 ? line : line.slice(0, colon);
          let field = colon < 0 ? "" : line.slice(colon + 1);
          if (field.startsWith(" ")) field = field.slice(1);
          if (name === "event") event = field;
          else if (name === "data") data.push(field);
          else if (name === "id") id = field;
        }
      }
    }
    if (data.length > 0) yield { event, data: data.join("\n"), id };
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
