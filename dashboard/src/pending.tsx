import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { Json, RunRecord, WaitRecord } from "../../src/api/http-api.ts";
import { api } from "./api.ts";
import { ErrorText, JsonBlock, NoteInput, useAction, useNow } from "./components.tsx";
import { dateTime, fields, units, until } from "./format.ts";
import { actAs } from "./identity.tsx";
import { runHref } from "./router.ts";
import { SchemaForm } from "./schema-form.tsx";
import { refusal, useCan, useMe } from "./session.ts";

/**
 * What a run waits for, each with what can be done about it: answer a question (a form from its
 * schema), approve or deny an approval (its exact payload, digest, approvers and expiry), send a
 * signal; timers, retries and child runs are shown with when they come due.
 */

interface ApprovalDetails {
  action: string;
  payload: Json;
  digest: string;
  approvers: string[];
  expiresAt: number;
}

interface QuestionDetails {
  question: string;
  schema: Json | null;
}

export function PendingItems(props: { run: RunRecord; waits: WaitRecord[]; onDone: () => void }) {
  const open = props.waits.filter((w) => w.status === "open");
  if (open.length === 0) return null;
  return (
    <div class="pending" data-testid="pending">
      {open.map((wait) => (
        <PendingItem key={wait.id} run={props.run} wait={wait} onDone={props.onDone} />
      ))}
    </div>
  );
}

function PendingItem(props: { run: RunRecord; wait: WaitRecord; onDone: () => void }) {
  switch (props.wait.kind) {
    case "user":
      return <Question {...props} />;
    case "approval":
      return <Approval {...props} />;
    case "signal":
      return <Signal {...props} />;
    default:
      return <Waiting wait={props.wait} />;
  }
}

function Question(props: { run: RunRecord; wait: WaitRecord; onDone: () => void }) {
  const { run, wait } = props;
  const details = fields<QuestionDetails>(wait.details);
  const allowed = useCan("operate");
  const action = useAction();
  const [sent, setSent] = useState(false);
  return (
    <div class="item question" data-testid="pending-question" data-wait-id={wait.id}>
      <div class="item-head">
        <span class="kind">question</span>
        <span class="muted small">{wait.id}</span>
        <Due wait={wait} label="times out" />
      </div>
      <p class="question-text">{details.question ?? wait.name}</p>
      {sent ? (
        <p class="ok">Answer sent.</p>
      ) : !allowed ? (
        <Refused permission="operate" />
      ) : (
        <SchemaForm
          idPrefix={`answer-${wait.id}`}
          schema={details.schema}
          busy={action.busy}
          disabled={!allowed}
          onSubmit={async (value) => {
            if (await action.run(() => api.answer(run.id, wait.id, value))) {
              setSent(true);
              props.onDone();
            }
          }}
        />
      )}
      <ErrorText error={action.error} testid="answer-error" />
    </div>
  );
}

function Approval(props: { run: RunRecord; wait: WaitRecord; onDone: () => void }) {
  const { run, wait } = props;
  const me = useMe();
  const allowed = useCan("approve");
  const details = fields<ApprovalDetails>(wait.details);
  const expiresAt = typeof details.expiresAt === "number" ? details.expiresAt : wait.dueAt;
  const now = useNow(1000);
  const expired = expiresAt !== null && expiresAt <= now;
  const approvers = Array.isArray(details.approvers) ? details.approvers : [];
  const notListed = me && approvers.length > 0 && !approvers.includes(me.subject);
  const [note, setNote] = useState("");
  const action = useAction();
  const [decided, setDecided] = useState<string | null>(null);
  const digest = typeof details.digest === "string" ? details.digest : "";
  const decide = async (decision: "approve" | "deny") => {
    const n = note.trim() || undefined;
    const ok = await action.run(() =>
      decision === "approve" ? api.approve(run.id, wait.id, digest, n) : api.deny(run.id, wait.id, digest, n),
    );
    if (ok) {
      setDecided(decision === "approve" ? "Approved." : "Denied.");
      props.onDone();
    }
  };
  return (
    <div class="item approval" data-testid="pending-approval" data-wait-id={wait.id}>
      <div class="item-head">
        <span class="kind">approval</span>
        <span class="muted small">{wait.id}</span>
      </div>
      <ApprovalFacts
        wait={wait}
        details={details}
        digest={digest}
        approvers={approvers}
        notListed={notListed ? me.subject : null}
        switchable={me?.switchable === true}
        expiresAt={expiresAt}
        expired={expired}
        now={now}
      />
      {decided ? (
        <p class="ok">{decided}</p>
      ) : !allowed ? (
        <Refused permission="approve" />
      ) : (
        <div class="decide">
          <NoteInput value={note} onChange={setNote} testid="approval-note" />
          <button
            type="button"
            class="approve"
            disabled={action.busy || expired || !digest || !allowed}
            title={allowed ? undefined : refusal("approve")}
            onClick={() => decide("approve")}
            data-testid="approve-button"
          >
            Approve
          </button>
          <button
            type="button"
            class="deny"
            disabled={action.busy || expired || !digest || !allowed}
            title={allowed ? undefined : refusal("approve")}
            onClick={() => decide("deny")}
            data-testid="deny-button"
          >
            Deny
          </button>
        </div>
      )}
      <ErrorText error={action.error} testid="approval-error" />
    </div>
  );
}

/** What is to be approved, exactly, by whom, until when. */
function ApprovalFacts(props: {
  wait: WaitRecord;
  details: Partial<ApprovalDetails>;
  digest: string;
  approvers: string[];
  /** The signed-in subject when the approvers do not include it. */
  notListed: string | null;
  /** A development server: offer to act as one of the approvers. */
  switchable: boolean;
  expiresAt: number | null;
  expired: boolean;
  now: number;
}) {
  const { wait, details, digest, approvers, expiresAt, expired, now } = props;
  return (
    <dl class="facts">
      <dt>Action</dt>
      <dd>
        <strong data-testid="approval-action">{details.action ?? wait.name}</strong>
      </dd>
      <dt>Approves exactly</dt>
      <dd>
        <JsonBlock value={details.payload ?? null} testid="approval-payload" />
      </dd>
      <dt>Digest</dt>
      <dd>
        <code class="digest" data-testid="approval-digest">
          {digest || "—"}
        </code>
      </dd>
      <dt>Approvers</dt>
      <dd>
        {approvers.length ? approvers.join(", ") : <span class="muted">anyone allowed to decide</span>}
        {props.notListed !== null && (
          <span class="warn" data-testid="approval-not-listed">
            {" "}
            (you, {props.notListed}, are not one of them: only {approvers.join(" or ")} may decide)
          </span>
        )}
        {props.notListed !== null &&
          props.switchable &&
          approvers.map((a) => (
            <button key={a} type="button" class="link small" onClick={() => actAs(a)} data-testid={`act-as-${a}`}>
              act as {a}
            </button>
          ))}
      </dd>
      <dt>Expires</dt>
      <dd data-testid="approval-expiry">
        {expiresAt === null ? (
          <span class="muted">never</span>
        ) : (
          <>
            {dateTime(expiresAt)}{" "}
            <span class={expired ? "expired" : "countdown"}>
              ({expired ? `expired ${until(expiresAt, now)}` : `${units(expiresAt - now)} left`})
            </span>
          </>
        )}
      </dd>
    </dl>
  );
}

function Signal(props: { run: RunRecord; wait: WaitRecord; onDone: () => void }) {
  const { run, wait } = props;
  const [payload, setPayload] = useState("");
  const allowed = useCan("operate");
  const action = useAction();
  const [sent, setSent] = useState(false);
  let parsed: { ok: true; value: Json } | { ok: false; message: string };
  try {
    parsed = { ok: true, value: payload.trim() === "" ? null : (JSON.parse(payload) as Json) };
  } catch (e) {
    parsed = { ok: false, message: (e as Error).message };
  }
  return (
    <div class="item signal" data-testid="pending-signal" data-wait-id={wait.id}>
      <div class="item-head">
        <span class="kind">signal</span>
        <span class="muted small">{wait.id}</span>
        <Due wait={wait} label="times out" />
      </div>
      <p>
        Waiting for signal <code>{wait.name}</code>
      </p>
      {sent ? (
        <p class="ok">Signal sent.</p>
      ) : !allowed ? (
        <Refused permission="operate" />
      ) : (
        <form
          class="signal-form"
          onSubmit={async (e) => {
            e.preventDefault();
            if (!parsed.ok) return;
            const value = parsed.value;
            if (await action.run(() => api.signal(run.id, wait.name, value))) {
              setSent(true);
              props.onDone();
            }
          }}
        >
          <textarea
            class={`mono${parsed.ok ? "" : " invalid"}`}
            rows={3}
            placeholder="payload (JSON; empty for null)"
            value={payload}
            onInput={(e) => setPayload(e.currentTarget.value)}
            data-testid="signal-payload"
          />
          {!parsed.ok && <div class="error-text">Payload is not JSON: {parsed.message}</div>}
          <div class="actions">
            <button
              type="submit"
              class="primary"
              disabled={action.busy || !parsed.ok || !allowed}
              title={allowed ? undefined : refusal("operate")}
              data-testid="signal-submit"
            >
              Send signal
            </button>
          </div>
        </form>
      )}
      <ErrorText error={action.error} testid="signal-error" />
    </div>
  );
}

/** Why the acts on an item are not shown to this role. */
function Refused(props: { permission: "operate" | "approve" }) {
  return (
    <p class="muted small" data-testid="not-allowed">
      Not shown: {refusal(props.permission)}.
    </p>
  );
}

/** A wait nobody acts on: a timer, a retry backoff, a child run. */
function Waiting(props: { wait: WaitRecord }) {
  const { wait } = props;
  const d = fields<{ childRunId: string; attempt: number; ms: number; until: number }>(wait.details);
  let what: ComponentChildren;
  switch (wait.kind) {
    case "timer":
      what = typeof d.ms === "number" ? `sleep ${units(d.ms)}` : "sleep";
      break;
    case "retry":
      what = (
        <>
          retry of <code>{wait.name}</code>
          {typeof d.attempt === "number" ? `, attempt ${d.attempt}` : ""}
        </>
      );
      break;
    case "child": {
      const child = typeof d.childRunId === "string" ? d.childRunId : wait.name;
      what = (
        <>
          child run <a href={runHref(child)}>{child}</a>
        </>
      );
      break;
    }
    default:
      what = wait.name;
  }
  return (
    <div class={`item ${wait.kind}`} data-testid={`pending-${wait.kind}`} data-wait-id={wait.id}>
      <div class="item-head">
        <span class="kind">{wait.kind}</span>
        <span class="muted small">{wait.id}</span>
        <Due wait={wait} label="due" />
      </div>
      <p>{what}</p>
    </div>
  );
}

function Due(props: { wait: WaitRecord; label: string }) {
  const now = useNow(1000);
  if (props.wait.dueAt === null) return null;
  return (
    <span class="due small" title={dateTime(props.wait.dueAt)}>
      {props.label} {until(props.wait.dueAt, now)}
    </span>
  );
}
