import { jsonBytes } from "../../history-meter.ts";
import type { EnvelopeState } from "../envelope-state.ts";

/**
 * `ctx.patched(changeId)`: true on the new code path, the run reached this point with this code.
 * On replay, true only when the history holds this marker at this point; a history that holds
 * another step there was written by the old code, so false (and no step number is taken).
 */
export function patchedMarker(x: EnvelopeState, changeId: string): boolean {
  const name = changeId;
  const next = x.cursor.next();
  if (next && !(next.kind === "marker" && next.name === name)) return false;
  const { seq, recorded } = x.begin("marker", name);
  if (!recorded) {
    const at = x.host.now();
    x.meter.add(jsonBytes(null) + jsonBytes(true), 0);
    x.writer.later(
      { ...x.newStep(seq, "marker", name, null, at), status: "completed", result: true, endedAt: at },
      false,
    );
  }
  return true;
}
