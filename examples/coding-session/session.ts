/**
 * The durable coding session (`../shared/background/001_…`, the ten steps; DESIGN §4, *Sandboxes*):
 * a coding model works on a git repository in a sandbox, turn by turn, and the session survives
 * the loss of the sandbox, of the worker and of answers on the way.
 *
 *  1. One workflow per session, keyed by its name: starting it again returns the same run.
 *  2. The sandbox is a step, `ctx.sandbox("workspace")`, found again by its label after a retry or
 *     a crash.
 *  3. The workspace is prepared in it: the remote (a local bare repository, bound read-only) cloned,
 *     the branch `agent/<session>` made, the setup script run. No network, no credential inside.
 *  4. Each turn is a loop run here, outside the sandbox: every model call a step, every command or
 *     file the model asks for a sandbox step, with a heartbeat timeout that notices a vanished
 *     sandbox.
 *  5. After every turn, a checkpoint: commit, push (a bundle handed out through the outbox and
 *     fetched into the remote by the host), transcript stored by its hash. The journal keeps the
 *     commit's SHA and the transcript's key.
 *  6. Between turns, a `user_message` signal with an id (a repeat is dropped) and a silence timer.
 *  7. A sandbox lost mid-turn (`SandboxLostError`) is rebuilt from the last pushed commit and the
 *     turn is run again.
 *  8. The pull request waits for an approval, and its tool looks for an open one of the branch
 *     before it opens one: an effect with an idempotency key, so a lost answer opens no second one.
 *  9. Every `turnsPerRun` turns the run continues as new with the SHA, the key and the message ids.
 * 10. The sandbox is deleted when the session ends, however it ends (the runtime deletes a run's
 *     sandboxes when the run ends, cancellation included).
 *
 * Run it with `npm run example:coding-session` (./demo.ts), or under the CLI:
 *
 *   node bin/cairn.js run examples/coding-session/session.ts coding_session session \
 *     --key title-case --input '{"session":"title-case","request":"Add a titleCase function with a test"}'
 *
 * The model is a scripted one unless the environment names a real one (`modelFromEnvironment`).
 * In a project of your own, import from "cairn" and "cairn/sandbox" instead of "../../src/…".
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { modelFromEnvironment } from "../../src/ai-sdk.ts";
import { defineAgent, defineConfig, ScriptedModel } from "../../src/index.ts";
import { BubblewrapProvider, LocalSandboxProvider, type SandboxProvider } from "../../src/sandbox.ts";
import { type PullRequest, startForge } from "./forge.ts";
import { createRemote } from "./git-remote.ts";
import { scriptedCoder } from "./scripted-coder.ts";
import { SessionRun, type SessionSettings, type SessionState } from "./session-run.ts";
import { sessionTools } from "./session-tools.ts";

export type { SessionState, UserMessage } from "./session-run.ts";

/** What the `session` workflow takes. */
export interface SessionInput {
  /** The session's name: its key (one run chain per name) and its branch, `agent/<session>`. */
  session: string;
  /** The first message for the coding model. */
  request: string;
  /** The branch the work starts from and the pull request goes into. @default "main" */
  base?: string | undefined;
  /** The pull request's title. @default the request's first line */
  title?: string | undefined;
  /** Set by `continueAsNew`: where the previous run of the session left off. */
  resume?: SessionState | undefined;
}

/** What a session returns when it ends. */
export interface SessionOutput {
  session: string;
  branch: string;
  /** The last pushed commit. */
  sha: string;
  transcriptKey: string | null;
  turns: number;
  rebuilds: number;
  /** How it ended: a pull request, the user's `end`, or the silence timer. */
  ended: "pull_request" | "end" | "silence";
  pullRequest: PullRequest | null;
}

/** Options of {@link codingSessionAgent}. */
export interface CodingSessionOptions {
  /** @default "coding_session" */
  name?: string;
  /** The bare repository that plays the remote (an absolute path, or relative to the working folder). */
  remote: string;
  /** The forge's URL, or a function that finds it when a tool first needs it. */
  forge: string | (() => string | Promise<string>);
  /** Holds the sessions' outboxes and transcripts. */
  dataDir: string;
  /** Called before the first turn of every run: e.g. to make the demo remote when it is missing. */
  ensureRemote?: () => Promise<void>;
  /** The runtime's model of the turns. @default "coder" */
  model?: string;
  /** Turns per run before it continues as new. @default 50 */
  turnsPerRun?: number;
  /** How long the session waits for a message before it ends. @default one day */
  silenceMs?: number;
  /** A command silent this long with no live answer from its sandbox: the sandbox is lost. @default 60000 */
  heartbeatTimeoutMs?: number;
  /** Start-to-close limit of a command. @default two hours */
  commandTimeoutMs?: number;
  /** Model calls one turn may make. @default 30 */
  maxModelCalls?: number;
  /** How long the pull request's approval stays open. @default seven days */
  approvalExpiresInMs?: number;
  /** Who may approve the pull request. @default anyone */
  approvers?: readonly string[];
  /**
   * Between turns, snapshot the sandbox and delete it (`release`): a waiting session holds no
   * sandbox, and the next turn's first call restores the snapshot. @default false
   */
  releaseWhileWaiting?: boolean;
}

const SessionInputSchema = z.object({
  session: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,99}$/, "a session name: lower-case letters, digits, . _ -"),
  request: z.string().min(1),
  base: z.string().min(1).optional(),
  title: z.string().min(1).optional(),
  resume: z
    .object({
      sha: z.string(),
      transcriptKey: z.string().nullable(),
      turns: z.number().int().min(0),
      seen: z.array(z.string()),
      rebuilds: z.number().int().min(0),
    })
    .optional(),
});

function settingsOf(options: CodingSessionOptions): SessionSettings {
  return {
    remote: resolve(options.remote),
    model: options.model ?? "coder",
    turnsPerRun: options.turnsPerRun ?? 50,
    silenceMs: options.silenceMs ?? 24 * 3600_000,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? 60_000,
    commandTimeoutMs: options.commandTimeoutMs ?? 2 * 3600_000,
    maxModelCalls: options.maxModelCalls ?? 30,
    approvalExpiresInMs: options.approvalExpiresInMs ?? 7 * 24 * 3600_000,
    approvers: options.approvers,
    releaseWhileWaiting: options.releaseWhileWaiting ?? false,
  };
}

/** The coding-session agent against a given remote and forge (tests make one per folder). */
export function codingSessionAgent(options: CodingSessionOptions) {
  const settings = settingsOf(options);
  const forge = async () => (typeof options.forge === "string" ? options.forge : await options.forge());
  const tools = sessionTools({
    remote: settings.remote,
    forge,
    dataDir: resolve(options.dataDir),
    ...(options.ensureRemote ? { ensureRemote: options.ensureRemote } : {}),
  });
  return defineAgent({
    name: options.name ?? "coding_session",
    description: "A coding model working on a branch in a sandbox, turn by turn, until a pull request",
    tools,
    workflows: {
      async session(ctx, input: SessionInput): Promise<SessionOutput> {
        const branch = `agent/${input.session}`;
        const s = new SessionRun(ctx, settings, input.session, branch, input.base ?? "main", input.resume);
        const end = (ended: SessionOutput["ended"], pullRequest: PullRequest | null = null): SessionOutput => {
          const { sha, transcriptKey, turns, rebuilds } = s.state;
          return { session: input.session, branch, sha, transcriptKey, turns, rebuilds, ended, pullRequest };
        };
        await s.open();
        try {
          let text: string | undefined = input.resume ? undefined : input.request;
          for (;;) {
            if (text === undefined) {
              const message = await s.nextMessage();
              if (message === "silence") return end("silence");
              if (message.action === "end") return end("end");
              if (message.action === "open_pull_request") {
                await s.close();
                const title = input.title ?? (input.request.split("\n")[0] ?? input.request).slice(0, 72);
                return end("pull_request", await s.openPullRequest(title));
              }
              text = message.text ?? "";
            }
            await s.turn(text);
            text = undefined;
            if (s.dueToContinue()) {
              await s.close();
              return await ctx.continueAsNew({ ...input, resume: s.state });
            }
          }
        } finally {
          // However the session ends; a cancelled run takes no step, and the runtime deletes its
          // sandboxes itself.
          await s.close().catch(() => undefined);
        }
      },
    },
    inputs: { session: SessionInputSchema },
  });
}

/**
 * Bubblewrap where it is installed (isolated), else the local provider (nothing isolated: it says
 * so wherever the sandbox is shown).
 */
export function defaultSandboxProvider(dir: string): SandboxProvider {
  const found = (process.env.PATH ?? "").split(":").some((p) => p !== "" && existsSync(join(p, "bwrap")));
  if (found && process.env.CAIRN_SANDBOX !== "local") return new BubblewrapProvider({ dir });
  return new LocalSandboxProvider({ dir });
}

let localForge: Promise<string> | undefined;
const DATA = resolve(process.env.CODING_SESSION_DIR ?? ".cairn/coding-session");
const REMOTE = join(DATA, "remote.git");

/** The agent the CLI runs: the demo remote in `.cairn/coding-session`, the forge at `FORGE_URL`. */
export const codingSession = codingSessionAgent({
  remote: REMOTE,
  dataDir: DATA,
  forge: () => {
    if (process.env.FORGE_URL) return process.env.FORGE_URL;
    localForge ??= startForge({ repo: REMOTE, file: join(DATA, "pulls.json") }).then((forge) => {
      forge.unref();
      process.stderr.write(`forge: started in this process at ${forge.url}\n`);
      return forge.url;
    });
    return localForge;
  },
  ensureRemote: async () => {
    if (!existsSync(REMOTE)) await createRemote(REMOTE);
  },
});

// Named, not "default": `cairn dev` loads this module beside others that bring their own default.
export const runtimeOptions = defineConfig({
  models: {
    coder: modelFromEnvironment(
      process.env,
      () => new ScriptedModel({ name: "scripted-coder", replies: [scriptedCoder] }),
    ),
  },
  sandbox: { provider: defaultSandboxProvider(join(DATA, "sandboxes")), logDir: join(DATA, "logs") },
});
