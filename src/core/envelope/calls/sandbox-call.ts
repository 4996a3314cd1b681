import { InvalidInputError } from "../../errors.ts";
import type { Json } from "../../records.ts";
import type { RetryPolicy } from "../../retry-policy.ts";
import type { Sandbox, SandboxInfo, SandboxSnapshot, SandboxSpec } from "../../sandbox.ts";
import type { SandboxExecOptions, SandboxExecResult, SandboxHandle } from "../../sandbox-handle.ts";
import type { EnvelopeState } from "../envelope-state.ts";
import { governedCall } from "../governed-call.ts";
import { runStep } from "../journaled-step.ts";
import { SandboxSlot, sandboxPlace } from "../sandbox-slot.ts";
import type { StepExecution } from "../step-attempt.ts";
import { execAttempt } from "./sandbox-exec.ts";

/** The longest sandbox name (its label is `<runId>/<name>`). */
const MAX_NAME_LENGTH = 100;

/**
 * `ctx.sandbox(name, spec?)` (DESIGN §4, *Sandboxes*): a step of kind `sandbox` named
 * `sandbox:<name>` that creates or finds the sandbox labelled `<runId>/<name>` — a retry, a replay
 * or a new worker after a crash finds the one the first attempt made — and records its info. The
 * handle it returns makes each of its calls a step of its own.
 */
export function sandboxCall(x: EnvelopeState, name: string, spec: SandboxSpec = {}): Promise<SandboxHandle> {
  let label: string;
  let place: ReturnType<typeof sandboxPlace>;
  try {
    checkName(name);
    place = sandboxPlace(x.host.sandbox, name);
    label = `${x.run.id}/${name}`;
  } catch (error) {
    return Promise.reject(error);
  }
  let made: Sandbox | undefined;
  const args = { name, spec: journaledSpec(spec) };
  return sandboxStep(x, "sandbox", name, args, {}, async () => {
    made = await place.provider.create(label, spec);
    if (!made.info.isolated) {
      x.host.log("warn", `sandbox "${name}" of run ${x.run.id} is NOT ISOLATED (${made.info.kind} provider)`, {
        runId: x.run.id,
        sandbox: made.info.id,
      });
    }
    return made.info as unknown as Json;
  }).then((recorded) => {
    const info = recorded as unknown as SandboxInfo;
    const slot = new SandboxSlot({ name, label, place, spec, info, now: () => x.host.now() });
    slot.lastSnapshot = x.sandboxes.get(name)?.lastSnapshot;
    if (made?.info.id === info.id) slot.hold(made);
    x.sandboxes.set(name, slot);
    return handleOf(x, slot);
  });
}

/** The handle of a sandbox: each call a step over the name's current slot. */
function handleOf(x: EnvelopeState, made: SandboxSlot): SandboxHandle {
  const { name } = made;
  const slot = () => x.sandboxes.get(name) ?? made;
  return {
    name,
    get info() {
      return slot().info;
    },
    exec: (command, options = {}) => execCall(x, slot, command, options),
    readFile: (path) =>
      sandboxStep(x, "readFile", name, { path }, {}, async (attempt) =>
        new TextDecoder().decode(await (await slot().live(attempt)).readFile(path)),
      ),
    writeFile: async (path, data) => {
      await sandboxStep(x, "writeFile", name, { path, data }, {}, async (attempt) => {
        await (await slot().live(attempt)).writeFile(path, data);
        return null;
      });
    },
    snapshot: () =>
      sandboxStep(x, "snapshot", name, null, {}, async (attempt) =>
        snapshotJson(await (await slot().live(attempt)).snapshot()),
      ).then((snapshot) => {
        slot().lastSnapshot = snapshot.id;
        return snapshot;
      }),
    restore: async (snapshot) => {
      await sandboxStep(x, "restore", name, { snapshot }, {}, async (attempt) => {
        await (await slot().live(attempt)).restore(snapshot);
        return null;
      });
    },
    release: () =>
      sandboxStep(x, "release", name, null, {}, async (attempt) => {
        const sandbox = await slot().live(attempt);
        const snapshot = await sandbox.snapshot();
        await sandbox.destroy();
        slot().hold(undefined);
        return snapshotJson(snapshot);
      }).then((snapshot) => {
        slot().lastSnapshot = snapshot.id;
        slot().hold(undefined);
        return snapshot;
      }),
    destroy: async () => {
      await sandboxStep(x, "destroy", name, null, {}, async () => {
        const sandbox = await slot().current();
        await sandbox?.destroy();
        return { id: sandbox?.info.id ?? null };
      });
      slot().destroyed = true;
      slot().hold(undefined);
    },
  };
}

/** `exec` of a handle: a `sandbox` step named `exec:<name>` (see `execAttempt`). */
function execCall(
  x: EnvelopeState,
  slot: () => SandboxSlot,
  command: string | readonly string[],
  options: SandboxExecOptions,
): Promise<SandboxExecResult> {
  const { name } = slot();
  const args = {
    command: (typeof command === "string" ? command : [...command]) as Json,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
  };
  return sandboxStep(
    x,
    "exec",
    name,
    args,
    { retry: options.retry, timeoutMs: options.timeoutMs },
    async (attempt) =>
      (await execAttempt({
        slot: slot(),
        runId: x.run.id,
        command,
        options,
        attempt,
        emit: (event) => x.host.emit(event),
      })) as unknown as Json,
  ) as unknown as Promise<SandboxExecResult>;
}

/** A call of a sandbox as a governed `sandbox` step named `<call>:<name>`. */
function sandboxStep<R>(
  x: EnvelopeState,
  call: string,
  sandbox: string,
  args: Json,
  limits: { retry?: RetryPolicy | undefined; timeoutMs?: number | undefined },
  run: (attempt: StepExecution) => Promise<R>,
): Promise<R> {
  const name = `${call}:${sandbox}`;
  return governedCall(x, "sandbox", "sandbox", name, args, undefined, (begun) =>
    runStep(
      x,
      "sandbox",
      name,
      args,
      {
        policy: limits.retry,
        startToCloseTimeoutMs: limits.timeoutMs,
        heartbeatTimeoutMs: undefined,
        run,
        effect: undefined,
      },
      begun,
    ),
  );
}

function snapshotJson(snapshot: SandboxSnapshot): SandboxSnapshot {
  return { id: snapshot.id, bytes: snapshot.bytes };
}

/** The spec as the journal keeps it: the env's names, not its values (a token may be one). */
function journaledSpec(spec: SandboxSpec): Json {
  const { env, ...rest } = spec;
  return { ...(rest as Record<string, Json>), ...(env ? { env: Object.keys(env) } : {}) } as Json;
}

function checkName(name: string): void {
  if (typeof name !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) || name.length > MAX_NAME_LENGTH) {
    throw new InvalidInputError(
      `sandbox name ${JSON.stringify(name)} is not a name: use letters, digits, ".", "_" and "-" (at most ${MAX_NAME_LENGTH}, starting with a letter or digit), e.g. ctx.sandbox("build")`,
      [{ path: ["name"], message: "not a sandbox name" }],
    );
  }
}
