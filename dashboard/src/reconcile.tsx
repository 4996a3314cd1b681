import { useState } from "preact/hooks";
import type { Json } from "../../src/api/http-api.ts";
import { api, type EffectEntry, type Reconciliation } from "./api.ts";
import { ErrorText, JsonBlock, NoteInput, useAction } from "./components.tsx";

/**
 * Reconciling an effect of unknown outcome (DESIGN §5): the operator says whether it happened,
 * and when it did, the result the workflow is to receive and the receipt that proves it; a
 * confirmation then shows exactly what the workflow will receive before anything is sent.
 */

type Draft = { outcome: "applied" | "not_applied" | ""; result: string; receipt: string; note: string };

/** A JSON box's value: empty is "not given". */
function parsed(text: string): { ok: true; value: Json | undefined } | { ok: false; message: string } {
  if (text.trim() === "") return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as Json };
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  }
}

export function Reconcile(props: { runId: string; entry: EffectEntry; onDone: () => void }) {
  const { entry } = props;
  const id = entry.effect.id;
  const [open, setOpen] = useState(false);
  const [draft, setDraft] = useState<Draft>({ outcome: "", result: "", receipt: "", note: "" });
  const [review, setReview] = useState<Reconciliation | null>(null);
  const action = useAction();
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)} data-testid={`reconcile-${id}`}>
        Reconcile…
      </button>
    );
  }
  if (review) {
    return (
      <ReconcileConfirm
        entry={entry}
        decision={review}
        busy={action.busy}
        error={action.error}
        onBack={() => setReview(null)}
        onConfirm={async () => {
          if (await action.run(() => api.reconcile(props.runId, id, review))) props.onDone();
        }}
      />
    );
  }
  return (
    <ReconcileForm
      entry={entry}
      draft={draft}
      setDraft={setDraft}
      onReview={setReview}
      onClose={() => setOpen(false)}
    />
  );
}

function ReconcileForm(props: {
  entry: EffectEntry;
  draft: Draft;
  setDraft: (draft: Draft) => void;
  onReview: (decision: Reconciliation) => void;
  onClose: () => void;
}) {
  const { draft, setDraft } = props;
  const id = props.entry.effect.id;
  const result = parsed(draft.result);
  const receipt = parsed(draft.receipt);
  const applied = draft.outcome === "applied";
  const ready = draft.outcome !== "" && (!applied || (result.ok && receipt.ok));
  const set = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });
  return (
    <form
      class="reconcile-form"
      data-testid={`reconcile-form-${id}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (!ready || draft.outcome === "" || !result.ok || !receipt.ok) return;
        const note = draft.note.trim();
        props.onReview({
          outcome: draft.outcome,
          ...(applied && result.value !== undefined && { result: result.value }),
          ...(applied && receipt.value !== undefined && { receipt: receipt.value }),
          ...(note && { note }),
        });
      }}
    >
      <OutcomeChoice id={id} outcome={draft.outcome} onChange={(outcome) => set({ outcome })} />
      {applied && (
        <>
          <JsonField
            label={`Result: what ctx.tool("${props.entry.name}") returns to the workflow (JSON; empty is null)`}
            value={draft.result}
            problem={result.ok ? null : result.message}
            onInput={(value) => set({ result: value })}
            testid={`reconcile-result-${id}`}
          />
          <JsonField
            label="Receipt: the proof, e.g. the bank's reference (JSON; empty records who reconciled)"
            value={draft.receipt}
            problem={receipt.ok ? null : receipt.message}
            onInput={(value) => set({ receipt: value })}
            testid={`reconcile-receipt-${id}`}
          />
        </>
      )}
      <NoteInput value={draft.note} onChange={(note) => set({ note })} testid={`reconcile-note-${id}`} />
      <div class="actions">
        <button type="submit" class="primary" disabled={!ready} data-testid={`reconcile-review-${id}`}>
          Review…
        </button>
        <button type="button" class="link" onClick={props.onClose}>
          close
        </button>
      </div>
    </form>
  );
}

/** Applied or not applied. */
function OutcomeChoice(props: {
  id: string;
  outcome: Draft["outcome"];
  onChange: (outcome: "applied" | "not_applied") => void;
}) {
  const { id } = props;
  return (
    <fieldset>
      <legend>Did it happen in the outside world?</legend>
      <label class="inline">
        <input
          type="radio"
          name={`outcome-${id}`}
          checked={props.outcome === "applied"}
          onChange={() => props.onChange("applied")}
          data-testid={`reconcile-outcome-applied-${id}`}
        />{" "}
        applied: it happened
      </label>
      <label class="inline">
        <input
          type="radio"
          name={`outcome-${id}`}
          checked={props.outcome === "not_applied"}
          onChange={() => props.onChange("not_applied")}
          data-testid={`reconcile-outcome-not-applied-${id}`}
        />{" "}
        not applied: it did not
      </label>
    </fieldset>
  );
}

function JsonField(props: {
  label: string;
  value: string;
  problem: string | null;
  onInput: (value: string) => void;
  testid: string;
}) {
  return (
    <label class="field">
      <span class="field-name">{props.label}</span>
      <textarea
        class={`mono${props.problem ? " invalid" : ""}`}
        rows={3}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
        data-testid={props.testid}
      />
      {props.problem && <span class="error-text">Not JSON: {props.problem}</span>}
    </label>
  );
}

/** What will happen, and what the workflow will receive, before the decision is sent. */
function ReconcileConfirm(props: {
  entry: EffectEntry;
  decision: Reconciliation;
  busy: boolean;
  error: string | null;
  onBack: () => void;
  onConfirm: () => void;
}) {
  const { entry, decision } = props;
  const id = entry.effect.id;
  return (
    <div class="reconcile-confirm" data-testid={`reconcile-confirm-${id}`}>
      {decision.outcome === "applied" ? (
        <>
          <p>
            <strong>Applied.</strong> The tool does not run again; <code>ctx.tool("{entry.name}")</code> returns to the
            workflow:
          </p>
          <JsonBlock value={decision.result ?? null} testid={`reconcile-receives-${id}`} />
          <p class="small">Receipt recorded:</p>
          <JsonBlock value={decision.receipt ?? { reconciledBy: "you" }} testid={`reconcile-receipt-shown-${id}`} />
        </>
      ) : (
        <p data-testid={`reconcile-receives-${id}`}>
          <strong>Not applied.</strong> The workflow receives nothing yet: <code>{entry.name}</code> runs again with the
          same idempotency key <code>{entry.effect.idempotencyKey}</code>, under its retry policy, and the workflow
          receives what that run returns.
        </p>
      )}
      {decision.note && <p class="small muted">Note: {decision.note}</p>}
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={props.busy}
          onClick={props.onConfirm}
          data-testid={`reconcile-confirm-button-${id}`}
        >
          {props.busy ? "Sending…" : `Confirm: ${decision.outcome === "applied" ? "applied" : "not applied"}`}
        </button>
        <button type="button" class="link" onClick={props.onBack}>
          back
        </button>
      </div>
      <ErrorText error={props.error} testid={`reconcile-error-${id}`} />
    </div>
  );
}
