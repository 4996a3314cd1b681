import type { Json, StepRecord } from "../../src/api/http-api.ts";
import { ErrorView, JsonBlock } from "./components.tsx";
import { oneLine } from "./format.ts";

/**
 * A model step (`llm`) as the conversation it was: the system prompt, the messages (or the
 * prompt), the tool calls the assistant made and the tools' results, then the model's answer —
 * instead of the raw request and response JSON, which stays one click away.
 */

type Obj = { [key: string]: Json };

const asObj = (value: Json | undefined): Obj | null =>
  value && typeof value === "object" && !Array.isArray(value) ? value : null;
const asText = (value: Json | undefined): string => (typeof value === "string" ? value : "");

interface ToolCall {
  id: string;
  name: string;
  args: Json;
}

function toolCalls(value: Json | undefined): ToolCall[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((c) => {
    const o = asObj(c);
    return o ? [{ id: asText(o.id), name: asText(o.name), args: o.args ?? null }] : [];
  });
}

export function Conversation(props: { step: StepRecord; streaming?: string | undefined }) {
  const { step } = props;
  const request = asObj(step.args) ?? {};
  const response = asObj(step.result);
  const messages = Array.isArray(request.messages) ? request.messages.map(asObj).filter((m) => m !== null) : [];
  return (
    <div class="conversation" data-testid={`conversation-${step.seq}`}>
      {asText(request.system) && <Message speaker="system" text={asText(request.system)} />}
      {asText(request.prompt) && <Message speaker="user" text={asText(request.prompt)} />}
      {messages.map((m, i) => (
        <ChatMessageView key={i} message={m} />
      ))}
      {Array.isArray(request.tools) && request.tools.length > 0 && (
        <p class="small muted">tools offered: {request.tools.map((t) => asText(asObj(t)?.name)).join(", ")}</p>
      )}
      {step.status === "failed" ? (
        <ErrorView error={step.error} />
      ) : response ? (
        <Message
          speaker="assistant"
          text={asText(response.text)}
          calls={toolCalls(response.toolCalls)}
          meta={[asText(response.model), asText(response.finishReason)].filter(Boolean).join(" · ")}
          testid={`conversation-answer-${step.seq}`}
        />
      ) : (
        <Message speaker="assistant" text={props.streaming ?? "…"} />
      )}
      <details>
        <summary class="small">raw request and response</summary>
        <JsonBlock value={step.args} />
        <JsonBlock value={step.result} empty="no response yet" />
      </details>
    </div>
  );
}

function ChatMessageView(props: { message: Obj }) {
  const { message } = props;
  const role = asText(message.role);
  if (role === "tool") {
    return (
      <div class={`message role-tool${message.isError === true ? " failed" : ""}`} data-testid="message-tool">
        <div class="who">
          tool result · <code>{asText(message.name)}</code>{" "}
          <span class="muted small">{asText(message.toolCallId)}</span>
        </div>
        <pre class="text">{asText(message.content)}</pre>
      </div>
    );
  }
  return <Message speaker={role || "user"} text={asText(message.content)} calls={toolCalls(message.toolCalls)} />;
}

function Message(props: { speaker: string; text: string; calls?: ToolCall[]; meta?: string; testid?: string }) {
  return (
    <div class={`message role-${props.speaker}`} data-testid={props.testid ?? `message-${props.speaker}`}>
      <div class="who">
        {props.speaker}
        {props.meta && <span class="muted small"> · {props.meta}</span>}
      </div>
      {props.text && <div class="text">{props.text}</div>}
      {props.calls?.map((call) => (
        <div key={call.id || call.name} class="tool-call" data-testid="tool-call">
          calls <code>{call.name}</code>
          <span class="mono small"> {oneLine(call.args, 120)}</span>
          {call.id && <span class="muted small"> {call.id}</span>}
        </div>
      ))}
    </div>
  );
}
