import { chmod, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import {
  type ChatMessage,
  defineTool,
  EffectNotAppliedError,
  EffectRefusedError,
  type EffectStatusAnswer,
} from "../../src/index.ts";
import type { PullRequest } from "./forge.ts";
import { createPullRequest, ForgeRefusedError, ForgeUnreachableError, listPullRequests } from "./forge-client.ts";
import { acceptBundle, branchSha } from "./git-remote.ts";
import { TranscriptStore } from "./transcript-store.ts";

/**
 * The session's tools that run on the host, outside the sandbox: they hold what the sandbox must
 * not (write access to the remote, the forge, the transcript store).
 */

/** Where the host-side tools find things. */
export interface SessionHost {
  /** The bare repository that plays the remote. */
  remote: string;
  /** The forge's URL, or a function that finds it when a tool first needs it. */
  forge: () => Promise<string>;
  /** Holds `outbox/<session>/` (the sandbox's bundles) and `transcripts/`. */
  dataDir: string;
  /** Called before a run's first step: e.g. makes the demo remote when it is missing. */
  ensureRemote?: () => Promise<void>;
}

const Session = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "a session name: lower-case letters, digits, . _ -");

/** What the journal keeps of a checkpoint: the pushed commit and the transcript's key. */
export interface Checkpoint {
  sha: string;
  transcriptKey: string | null;
}

/** Host folder of a session's outbox. */
export function outboxOf(host: SessionHost, session: string): string {
  return join(host.dataDir, "outbox", session);
}

async function pullStatus(host: SessionHost, head: string): Promise<EffectStatusAnswer<PullRequest>> {
  try {
    const [found] = await listPullRequests(await host.forge(), head);
    if (!found) return { outcome: "not_applied" };
    return { outcome: "applied", result: found, receipt: { pull: found.number, url: found.url } };
  } catch (error) {
    return { outcome: "unknown", note: `the forge's list of pull requests could not be read: ${String(error)}` };
  }
}

const PullArgs = z.object({
  session: Session,
  head: z.string().min(1),
  base: z.string().min(1),
  title: z.string().min(1),
  body: z.string(),
});

/** The host-side tools of the session agent. */
export function sessionTools(host: SessionHost) {
  const transcripts = new TranscriptStore(join(host.dataDir, "transcripts"));
  return {
    open_session: defineTool({
      description: "Makes the session's outbox and finds the base branch's commit on the remote",
      input: z.object({ session: Session, base: z.string().min(1) }),
      run: async (_ctx, { session, base }) => {
        await host.ensureRemote?.();
        const outbox = outboxOf(host, session);
        await mkdir(outbox, { recursive: true });
        // The sandbox's user (nobody, under bubblewrap started by root) writes bundles here.
        await chmod(join(host.dataDir, "outbox"), 0o711);
        await chmod(outbox, 0o777);
        const sha = await branchSha(host.remote, base);
        if (sha === undefined) throw new EffectRefusedError(`the remote ${host.remote} has no branch ${base}`);
        return { outbox, baseSha: sha };
      },
    }),
    load_transcript: defineTool({
      description: "Reads the session's transcript by its key",
      input: z.object({ key: z.string() }),
      run: async (_ctx, { key }): Promise<ChatMessage[]> => transcripts.get(key),
    }),
    checkpoint: defineTool({
      description: "Pushes the turn's commits (a bundle from the outbox) to the remote and stores the transcript",
      input: z.object({
        branch: z.string().min(1),
        sha: z.string().regex(/^[0-9a-f]{40}$/),
        bundle: z.string().nullable(),
        previousKey: z.string().nullable(),
        added: z.array(z.any()),
      }),
      run: async (_ctx, args): Promise<Checkpoint> => {
        if (args.bundle !== null) {
          await acceptBundle(host.remote, args.bundle, args.branch, args.sha);
          await rm(args.bundle, { force: true });
        }
        const transcriptKey = await transcripts.append(args.previousKey, args.added as ChatMessage[]);
        return { sha: args.sha, transcriptKey };
      },
    }),
    open_pull_request: defineTool({
      description: "Opens the session's pull request on the forge, or returns the one its branch has",
      input: PullArgs,
      effect: {
        // One session, one pull request, whichever run of its chain or attempt opens it.
        key: (args: z.infer<typeof PullArgs>) => args.session,
        status: (_ctx, args: z.infer<typeof PullArgs>) => pullStatus(host, args.head),
        receipt: (pull: PullRequest) => ({ pull: pull.number, url: pull.url, headSha: pull.headSha }),
      },
      run: async (ctx, args): Promise<PullRequest> => {
        const forge = await host.forge();
        try {
          // The existence check: a pull request of this branch, opened by an earlier attempt whose
          // answer was lost, is the one to return.
          const [existing] = await listPullRequests(forge, args.head, ctx.signal);
          if (existing) return existing;
          const { session: _, ...draft } = args;
          return await createPullRequest(forge, { ...draft, key: ctx.idempotencyKey }, ctx.signal);
        } catch (error) {
          if (error instanceof ForgeUnreachableError) throw new EffectNotAppliedError(error.message, { cause: error });
          if (error instanceof ForgeRefusedError) throw new EffectRefusedError(error.message, { cause: error });
          throw error;
        }
      },
    }),
  };
}
