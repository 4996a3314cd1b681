import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* Errors of sandboxes (DESIGN §4, *Sandboxes*). */

/**
 * A sandbox's workspace is gone without a destroy (its directory removed, its machine reclaimed),
 * or it was destroyed under the caller. Retryable: the caller restores it from its last snapshot
 * into a new sandbox with the same label, or rebuilds it its own way.
 */
export class SandboxLostError extends CairnError {
  static override readonly retryable = true;
  readonly code = "SANDBOX_LOST" as const;
  /** The provider's id of the lost sandbox. */
  readonly sandbox: string;
  constructor(message: string, sandbox: string, options?: CairnErrorOptions) {
    super(message, options);
    this.sandbox = sandbox;
  }
}

/**
 * A sandbox provider cannot work on this machine (bubblewrap missing, namespaces refused, `prlimit`
 * absent for a spec with limits). Not retryable: the machine must change, or the provider.
 */
export class SandboxUnavailableError extends CairnError {
  readonly code = "SANDBOX_UNAVAILABLE" as const;
}

markErrorClasses({ SandboxLostError, SandboxUnavailableError });
