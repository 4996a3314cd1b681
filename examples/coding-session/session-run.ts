import type { ChatMessage, WorkflowContext } from "../../src/index.ts";
import { WaitTimeoutError } from "../../src/index.ts";
import type { PullRequest } from "./forge.ts";
import type { Checkpoint } from "./session-tools.ts";
import { isSandboxLost, runTurn, SANDBOX_RETRY, type TurnOptions } from "./turn.ts";
import {
  checkpointSha,
  commitScript,
  prepareScript,
  REPO,
  rebuildScript,
  sessionSandboxSpec,
  type WorkspaceHandle,
} from "./workspace.ts";

/** Where a session stands between turns: all a successor run (`continueAsNew`) needs. */
export interface SessionState {
  /** The last pushed commit of the session's branch (the base's commit before the first turn). */
  sha: string;
  /** The transcript's key in the transcript store (null before the first checkpoint). */
  transcriptKey: string | null;
  /** Turns done (checkpointed). */
  turns: number;
  /** Ids of the last messages taken, so a repeat is dropped (in a successor run too). */
  seen: string[];
  /** Times the sandbox was rebuilt after it was lost. */
  rebuilds: number;
}

/** A `user_message` signal's payload. */
export interface UserMessage {
  /** Unique per message: a second delivery of one id is dropped. */
  id: string;
  /** The message for the coding model. */
  text?: string;
  /** Instead of a message: open the pull request, or end the session without one. */
  action?: "open_pull_request" | "end";
}

/** The settings a session's workflow runs with (the agent's options, filled in). */
export interface SessionSettings extends TurnOptions {
  remote: string;
  turnsPerRun: number;
  silenceMs: number;
  approvalExpiresInMs: number;
  approvers: readonly string[] | undefined;
  releaseWhileWaiting: boolean;
}

/** The sandbox's name in the run: its label is `<runId>/workspace`. */
export const SANDBOX_NAME = "workspace";
/** Rebuilds of the sandbox one turn may take before the session fails. */
const MAX_REBUILDS = 3;
/** Message ids remembered for dropping repeats. */
const SEEN = 100;

/** The workflow's ctx (its tool calls are checked by the agent's definition, not here). */
type Ctx = WorkflowContext;

/** One run of a session: its state, its sandbox, its conversation. The workflow drives it. */
export class SessionRun {
  readonly state: SessionState;
  messages: ChatMessage[] = [];
  /** The sandbox `ctx.sandbox` last handed out, ready or not: the one {@link close} deletes. */
  #handle: WorkspaceHandle | undefined;
  /** The sandbox once prepared (undefined again when it was lost). */
  #ws: WorkspaceHandle | undefined;
  /** Messages already in the stored transcript. */
  #saved = 0;
  #outbox = "";

  constructor(
    readonly ctx: Ctx,
    readonly settings: SessionSettings,
    readonly session: string,
    readonly branch: string,
    readonly base: string,
    resume: SessionState | undefined,
  ) {
    this.state = resume
      ? { ...resume, seen: [...resume.seen] }
      : { sha: "", transcriptKey: null, turns: 0, seen: [], rebuilds: 0 };
  }

  /** Step 1 of a run: the outbox, the base's commit, and the transcript when the session resumes. */
  async open(): Promise<void> {
    const opened = (await this.ctx.tool("open_session", { session: this.session, base: this.base })) as {
      outbox: string;
      baseSha: string;
    };
    this.#outbox = opened.outbox;
    if (this.state.sha === "") this.state.sha = opened.baseSha;
    if (this.state.transcriptKey !== null) {
      this.messages = (await this.ctx.tool("load_transcript", { key: this.state.transcriptKey })) as ChatMessage[];
      this.#saved = this.messages.length;
    }
  }

  /**
   * The sandbox, made (or found by its label) and filled: the remote cloned, the branch at the last
   * pushed commit, the setup script run. A sandbox lost meanwhile is made again.
   */
  async workspace(): Promise<WorkspaceHandle> {
    for (let attempt = 0; ; attempt++) {
      if (this.#ws) return this.#ws;
      const spec = sessionSandboxSpec({ remote: this.settings.remote, outbox: this.#outbox });
      const ws: WorkspaceHandle = await this.ctx.sandbox(SANDBOX_NAME, spec);
      this.#handle = ws;
      const { remote } = this.settings;
      const script =
        this.state.turns === 0
          ? prepareScript({ remote, base: this.base, branch: this.branch })
          : rebuildScript({ remote, branch: this.branch, sha: this.state.sha });
      try {
        const ready = await ws.exec(script, {
          retry: SANDBOX_RETRY,
          heartbeatTimeoutMs: this.settings.heartbeatTimeoutMs,
        });
        if (ready.exitCode !== 0)
          throw new Error(`preparing the workspace failed (exit ${ready.exitCode}):\n${ready.tail}`);
        this.#ws = ws;
      } catch (error) {
        if (!isSandboxLost(error) || attempt >= MAX_REBUILDS) throw error;
      }
    }
  }

  /**
   * A turn, rebuilt and retried when the sandbox is lost in its middle: a new sandbox from the last
   * pushed commit, and the same request again with a note of what happened.
   */
  async turn(request: string): Promise<void> {
    let text = request;
    for (let rebuilds = 0; ; rebuilds++) {
      const ws = await this.workspace();
      try {
        const answer = await runTurn(this.ctx, ws, this.messages, text, this.settings);
        await this.#checkpoint(ws, answer);
        return;
      } catch (error) {
        if (!isSandboxLost(error) || rebuilds >= MAX_REBUILDS) throw error;
        this.#ws = undefined;
        this.state.rebuilds++;
        this.ctx.log("the sandbox was lost mid-turn: rebuilding it from the last pushed commit", {
          sha: this.state.sha,
          turn: this.state.turns + 1,
        });
        text =
          `${request}\n\n[The sandbox was lost in the middle of this turn. The workspace was rebuilt from ` +
          `${this.state.sha}, the last pushed commit: whatever was done after it is gone; do it again.]`;
      }
    }
  }

  /** Commits and pushes the turn, and stores the transcript: the journal keeps the SHA and the key. */
  async #checkpoint(ws: WorkspaceHandle, answer: string): Promise<void> {
    const turn = this.state.turns + 1;
    const [subject = "", ...rest] = answer.split("\n");
    const message = `turn ${turn}: ${subject.slice(0, 60)}\n\n${[subject, ...rest].join("\n")}\n`;
    const committed = await ws.exec(commitScript({ branch: this.branch, last: this.state.sha, outbox: this.#outbox }), {
      cwd: REPO,
      stdin: message,
      retry: SANDBOX_RETRY,
      heartbeatTimeoutMs: this.settings.heartbeatTimeoutMs,
    });
    if (committed.exitCode !== 0) throw new Error(`the checkpoint's commit failed:\n${committed.tail}`);
    const sha = checkpointSha(committed.tail);
    const saved = (await this.ctx.tool("checkpoint", {
      branch: this.branch,
      sha,
      bundle: sha === this.state.sha ? null : `${this.#outbox}/${sha}.bundle`,
      previousKey: this.state.transcriptKey,
      added: this.messages.slice(this.#saved),
    })) as Checkpoint;
    this.state.sha = saved.sha;
    this.state.transcriptKey = saved.transcriptKey;
    this.state.turns = turn;
    this.#saved = this.messages.length;
  }

  /**
   * The next message: a `user_message` signal whose id was not seen (a repeat is dropped), or
   * `silence` when none came within the silence timer.
   */
  async nextMessage(): Promise<UserMessage | "silence"> {
    if (this.settings.releaseWhileWaiting && this.#ws) {
      // Hibernate: snapshot and delete; the next call of the handle restores the snapshot.
      await this.#ws.release();
    }
    for (;;) {
      let message: UserMessage;
      try {
        message = await this.ctx.waitForSignal<UserMessage>("user_message", { timeoutMs: this.settings.silenceMs });
      } catch (error) {
        if (error instanceof WaitTimeoutError) return "silence";
        throw error;
      }
      if (typeof message?.id !== "string" || this.state.seen.includes(message.id)) {
        this.ctx.log("dropped a user_message: a repeat, or no id", { id: message?.id });
        continue;
      }
      this.state.seen = [...this.state.seen, message.id].slice(-SEEN);
      if (message.action !== undefined || typeof message.text === "string") return message;
      this.ctx.log("dropped a user_message with neither text nor action", { id: message.id });
    }
  }

  /** Whether this run has done its share of turns and hands over to a successor. */
  dueToContinue(): boolean {
    return this.state.turns > 0 && this.state.turns % this.settings.turnsPerRun === 0;
  }

  /**
   * Step 8: the approval (of the exact branch, commit and title), then the pull request as an
   * effect whose tool first looks for one already open for the branch.
   */
  async openPullRequest(title: string): Promise<PullRequest> {
    const answers = this.messages.filter((m) => m.role === "assistant" && !m.toolCalls?.length).map((m) => m.content);
    const body = answers.map((a, i) => `- turn ${i + 1}: ${a}`).join("\n");
    const pull = { session: this.session, head: this.branch, base: this.base, title, body };
    await this.ctx.requestApproval({
      action: "open_pull_request",
      payload: { ...pull, sha: this.state.sha },
      expiresInMs: this.settings.approvalExpiresInMs,
      ...(this.settings.approvers ? { approvers: this.settings.approvers } : {}),
    });
    return (await this.ctx.tool("open_pull_request", pull)) as PullRequest;
  }

  /** Step 10: deletes the sandbox, if this run has one. */
  async close(): Promise<void> {
    const ws = this.#handle;
    this.#handle = undefined;
    this.#ws = undefined;
    if (ws) await ws.destroy();
  }
}
