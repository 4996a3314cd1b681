/**
 * A `fetch` for `createOpenAI({ fetch })` that answers the OpenAI Responses API
 * (`POST /v1/responses`, the default model of `@ai-sdk/openai` 2.x and later) as the real one
 * does: the JSON body, or the SSE stream of events (`response.created`, `response.output_item.*`,
 * `response.output_text.delta`, `response.function_call_arguments.delta`, `response.completed`).
 * Each request takes the next reply of its script; every request body is recorded.
 */

/** What the fake model answers: text and/or one function call, or an error status. */
export type ResponsesReply =
  | {
      text?: string;
      call?: { id: string; name: string; args: unknown };
      usage?: { input: number; output: number };
      /** Streamed: the stream ends cleanly but without `response.completed`. */
      cut?: boolean;
    }
  | { status: number; message: string; retryAfterS?: number };

export interface FakeResponses {
  fetch: typeof globalThis.fetch;
  /** The parsed body of each request, in order. */
  bodies: Array<Record<string, unknown>>;
}

const MODEL = "gpt-4o-mini-2024-07-18";

export function fakeResponsesFetch(...script: ResponsesReply[]): FakeResponses {
  const bodies: Array<Record<string, unknown>> = [];
  const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = JSON.parse(String(init?.body)) as Record<string, unknown>;
    bodies.push(body);
    const reply = script.shift() ?? { text: "(no reply scripted)" };
    if ("status" in reply) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (reply.retryAfterS !== undefined) headers["retry-after"] = String(reply.retryAfterS);
      const error = { message: reply.message, type: "requests", param: null, code: null };
      return new Response(JSON.stringify({ error }), { status: reply.status, headers });
    }
    if (body.stream === true) return sse(events(reply));
    return Response.json(response(reply, output(reply)));
  };
  return { fetch: fetch as typeof globalThis.fetch, bodies };
}

type Answer = Exclude<ResponsesReply, { status: number }>;

function output(reply: Answer): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [];
  if (reply.text !== undefined) {
    items.push({
      type: "message",
      id: "msg_1",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: reply.text, annotations: [], logprobs: [] }],
    });
  }
  if (reply.call) {
    const { id, name, args } = reply.call;
    items.push({
      type: "function_call",
      id: "fc_1",
      call_id: id,
      name,
      arguments: JSON.stringify(args),
      status: "completed",
    });
  }
  return items;
}

function response(reply: Answer, items: Array<Record<string, unknown>>): Record<string, unknown> {
  const usage = reply.usage ?? { input: 10, output: 3 };
  return {
    id: "resp_1",
    object: "response",
    created_at: 1_764_633_600,
    model: MODEL,
    status: "completed",
    error: null,
    incomplete_details: null,
    output: items,
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
  };
}

/** The stream's events: the text word by word, the call's arguments in one delta. */
function events(reply: Answer): Array<Record<string, unknown>> {
  const all: Array<Record<string, unknown>> = [{ type: "response.created", response: response(reply, []) }];
  const items = output(reply);
  items.forEach((item, index) => {
    if (item.type === "message") {
      all.push({ type: "response.output_item.added", output_index: index, item: { ...item, content: [] } });
      for (const delta of (reply.text ?? "").split(/(?= )/)) {
        all.push({
          type: "response.output_text.delta",
          item_id: "msg_1",
          output_index: index,
          content_index: 0,
          delta,
          logprobs: [],
        });
      }
    } else {
      all.push({ type: "response.output_item.added", output_index: index, item: { ...item, arguments: "" } });
      all.push({
        type: "response.function_call_arguments.delta",
        item_id: "fc_1",
        output_index: index,
        delta: item.arguments,
      });
    }
    all.push({ type: "response.output_item.done", output_index: index, item });
  });
  if (!reply.cut) all.push({ type: "response.completed", response: response(reply, items) });
  return all.map((event, sequence_number) => ({ ...event, sequence_number }));
}

function sse(events: Array<Record<string, unknown>>): Response {
  const text = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");
  return new Response(text, { headers: { "content-type": "text/event-stream" } });
}
