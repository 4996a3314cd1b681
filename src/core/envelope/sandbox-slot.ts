import { SandboxLostError, SandboxUnavailableError } from "../errors.ts";
import type { StepRecord } from "../records.ts";
import type { Sandbox, SandboxInfo, SandboxProvider, SandboxSpec } from "../sandbox.ts";
import type { StepExecution } from "./step-attempt.ts";

/** The runtime's sandbox provider and log folder, as the envelope's host hands them out. */
export interface SandboxPlace {
  provider: SandboxProvider;
  logDir: string;
}

/**
 * One named sandbox of an execution (DESIGN §4, *Sandboxes*): its label, the spec it was made
 * with, what the journal says of it (its info, its last snapshot, whether it was destroyed) and the
 * provider's handle on it. Every sandbox call gets its sandbox here: the live one by label, or —
 * lost, or released — a new one with the same label restored from the run's last snapshot.
 */
export class SandboxSlot {
  readonly name: string;
  readonly label: string;
  readonly place: SandboxPlace;
  readonly #now: () => number;
  spec: SandboxSpec;
  info: SandboxInfo;
  /** The id of the run's last snapshot of it (a `snapshot` or `release` step), if any. */
  lastSnapshot: string | undefined = undefined;
  /** A `destroy` step destroyed it: calls fail until `ctx.sandbox(name)` makes it again. */
  destroyed = false;
  #sandbox: Sandbox | undefined;

  constructor(options: {
    name: string;
    label: string;
    place: SandboxPlace;
    spec: SandboxSpec;
    info: SandboxInfo;
    now: () => number;
  }) {
    this.#now = options.now;
    this.name = options.name;
    this.label = options.label;
    this.place = options.place;
    this.spec = options.spec;
    this.info = options.info;
  }

  /** Remembers the provider's handle (the one `create` returned). */
  hold(sandbox: Sandbox | undefined): void {
    this.#sandbox = sandbox;
  }

  /**
   * The live sandbox of this slot for an attempt: found by label, or restored from the run's last
   * snapshot into a new sandbox with the same label (recorded on the attempt); with no snapshot,
   * `SandboxLostError` (retryable: the workflow may rebuild it its own way).
   */
  async live(attempt: StepExecution): Promise<Sandbox> {
    if (this.destroyed) {
      throw new SandboxLostError(
        `sandbox "${this.name}" (label "${this.label}") was destroyed by the run's destroy step: call ctx.sandbox("${this.name}") to make a new one`,
        this.info.id,
      );
    }
    const found = this.#sandbox ?? (await this.place.provider.find(this.label));
    if (found && (await found.status()) === "live") {
      this.#sandbox = found;
      return found;
    }
    return this.#restore(found, attempt);
  }

  /** The provider's sandbox holding the label now, live or lost, if any (for a destroy). */
  async current(): Promise<Sandbox | undefined> {
    return this.#sandbox ?? (await this.place.provider.find(this.label));
  }

  async #restore(lost: Sandbox | undefined, attempt: StepExecution): Promise<Sandbox> {
    const snapshot = this.lastSnapshot;
    if (snapshot === undefined) {
      throw new SandboxLostError(
        `sandbox "${this.name}" (label "${this.label}", ${lost?.info.id ?? this.info.id}) is gone and the run has no snapshot of it: catch SandboxLostError and rebuild it (ctx.sandbox("${this.name}") makes a new one), or snapshot it before it can be lost`,
        lost?.info.id ?? this.info.id,
      );
    }
    // create() retires a lost sandbox holding the label and makes a new one.
    const fresh = await this.place.provider.create(this.label, this.spec);
    await fresh.restore(snapshot);
    this.#sandbox = fresh;
    attempt.restored({ name: this.name, lost: lost?.info.id ?? null, id: fresh.info.id, snapshot, at: this.#now() });
    return fresh;
  }
}

/**
 * True for a cleanup step a worker wrote at a run's end (`destroy:<name>` with `{ cleanup: true }`),
 * never one the workflow called: a replay of the run (resumed after a divergence) skips it.
 */
export function isCleanupStep(step: StepRecord): boolean {
  const args = step.args as { cleanup?: unknown } | null | undefined;
  return step.kind === "sandbox" && step.name.startsWith("destroy:") && args?.cleanup === true;
}

/** The host's sandbox place, or the error that names the runtime option to set. */
export function sandboxPlace(place: SandboxPlace | undefined, name: string): SandboxPlace {
  if (place) return place;
  throw new SandboxUnavailableError(
    `ctx.sandbox("${name}") needs a sandbox provider, and this runtime has none: pass new Runtime({ sandbox: { provider: new BubblewrapProvider() } }) (or LocalSandboxProvider, which isolates nothing), from "cairn/sandbox"`,
  );
}
