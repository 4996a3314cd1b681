import { jsonBytes } from "../../history-meter.ts";
import type { Json } from "../../records.ts";
import type { EnvelopeState } from "../envelope-state.ts";

/** `ctx.now()`, `ctx.random()`, `ctx.uuid()`: a value made once and replayed from the journal after. */
export async function valueCall<T extends Json>(
  x: EnvelopeState,
  name: "now" | "random" | "uuid",
  produce: () => T,
): Promise<T> {
  const { seq, recorded } = x.begin("value", name);
  if (recorded?.status === "completed") return recorded.result as T;
  const value = produce();
  const at = x.host.now();
  x.meter.add(jsonBytes(null) + jsonBytes(value), 0);
  // A result like any other: the commit that carries it must be synchronous. The next step's
  // start record rides on that commit and its function may see the value (a uuid used as an
  // idempotency key); a cheaper commit lost to a power loss would let the replay make another.
  // In a sequential workflow this costs no extra commit: it is the one the next step makes.
  x.writer.later({ ...x.newStep(seq, "value", name, null, at), status: "completed", result: value, endedAt: at }, true);
  return value;
}
