import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { RuntimeBackend } from "../src/backend/backend.ts";
import { PostgresBackend } from "../src/backend/postgres/postgres-backend.ts";
import { SqliteBackend } from "../src/backend/sqlite/sqlite-backend.ts";
import { StorageRejectedError } from "../src/core/errors.ts";
import { RUNTIME_VERSION } from "../src/runtime/version.ts";
import { forEachBackend, intercept } from "./helpers/backends.ts";

/**
 * A store's refusal of a value is not a lost worker (DESIGN §4, limits): the run ends FAILED with
 * the store's error, never INTERRUPTED and resumed to fail the same way again until its recoveries
 * are used up; and a run its worker cannot set up ends FAILED rather than staying RUNNING. On SQLite
 * and PostgreSQL the refusal is the store's own (a trigger, a CHECK constraint); on every backend
 * also as the backend says it (StorageRejectedError from its step write).
 */

const POISON = "poison-7c1e";

function ledger() {
  return defineAgent({
    name: "ledger",
    tools: {
      note: defineTool({ run: (_ctx, { text }: { text: string }) => ({ text }) }),
    },
    workflows: {
      async post(ctx, { text }: { text: string }) {
        await ctx.tool("note", { text: "fine" });
        return ctx.tool("note", { text });
      },
    },
  });
}

/**
 * Makes the store itself refuse any journal write that carries POISON; returns how to undo it (a
 * PostgreSQL schema is emptied and handed to a later test), or undefined where it cannot (memory).
 */
async function poisonStore(
  backend: RuntimeBackend,
  databaseUrl: string | undefined,
): Promise<(() => Promise<void>) | undefined> {
  if (backend instanceof SqliteBackend) {
    const db = new Database(backend.path);
    db.exec(`CREATE TRIGGER refuse_poison BEFORE INSERT ON steps WHEN NEW.result LIKE '%${POISON}%'
             BEGIN SELECT RAISE(ABORT, 'poison refused'); END;
             CREATE TRIGGER refuse_poison_update BEFORE UPDATE ON steps WHEN NEW.result LIKE '%${POISON}%'
             BEGIN SELECT RAISE(ABORT, 'poison refused'); END;`);
    db.close();
    return async () => {};
  }
  if (backend instanceof PostgresBackend) {
    const q = `${pg.escapeIdentifier(backend.schema)}.journal`;
    const sql = async (text: string) => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query(text);
      } finally {
        await client.end();
      }
    };
    await sql(`ALTER TABLE ${q} ADD CONSTRAINT no_poison CHECK (steps::text NOT LIKE '%${POISON}%')`);
    return () => sql(`ALTER TABLE ${q} DROP CONSTRAINT no_poison`);
  }
  return undefined;
}

forEachBackend((under) => {
  describe("a value the store refuses", () => {
    it("ends the run FAILED with the store's error, once, without a recovery", async () => {
      const store = under.backend();
      await store.init();
      const undo = await poisonStore(store, under.databaseUrl());
      const real = undo !== undefined;
      // Where the store cannot be made to refuse (memory), the backend's own refusal is played.
      const backend = real
        ? store
        : intercept(store, {
            async saveSteps(steps, options) {
              if (JSON.stringify(steps).includes(POISON)) {
                throw new StorageRejectedError("the store refused a value on saveSteps: poison refused");
              }
              return store.saveSteps(steps, options);
            },
          });
      const rt = under.runtimes.make({ agents: [ledger()], backend });
      const run = await rt.run("ledger", "post", { text: POISON });
      const ended = await rt.waitFor(run.id, { timeoutMs: 15_000 });
      expect(ended.state).toBe("FAILED");
      expect(ended.error?.code).toBe("STORAGE_REJECTED");
      expect(ended.error?.message).toMatch(/refused a value/);
      const transitions = await store.listTransitions(run.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "FAILED"]);
      expect(transitions.at(-1)?.reason).toMatch(/^STORAGE_REJECTED: /);
      await undo?.();
    });

    it("other runs written in the same batch are not failed with it", async () => {
      const store = under.backend();
      await store.init();
      const undo = await poisonStore(store, under.databaseUrl());
      if (!undo) return; // the memory backend has no store to refuse
      const rt = under.runtimes.make({ agents: [ledger()], backend: store });
      const runs = await Promise.all([
        rt.run("ledger", "post", { text: "a" }),
        rt.run("ledger", "post", { text: POISON }),
        rt.run("ledger", "post", { text: "b" }),
      ]);
      const ended = await Promise.all(runs.map((r) => rt.waitFor(r.id, { timeoutMs: 15_000 })));
      expect(ended.map((r) => r.state)).toEqual(["COMPLETED", "FAILED", "COMPLETED"]);
      await undo();
    });
  });

  describe("a run its worker cannot set up", () => {
    it("ends FAILED naming what it could not take, rather than staying RUNNING", async () => {
      const store = under.backend();
      await store.init();
      // Stored as an older client or a direct write could store it: a budget no run can have.
      const versions = { workflow: "1", policy: null, runtime: RUNTIME_VERSION };
      const created = await store.createRun({
        id: "run_badbudget",
        agent: "ledger",
        workflow: "post",
        key: null,
        input: { text: "x" },
        versions,
        meta: { budget: { steps: -1 } },
        actor: { kind: "user", id: "test" },
        reason: "started",
        at: Date.now(),
      });
      const rt = under.runtimes.make({ agents: [ledger()], backend: store });
      await rt.start();
      const ended = await rt.waitFor(created.run.id, { timeoutMs: 15_000 });
      expect(ended.state).toBe("FAILED");
      expect(ended.error?.code).toBe("INVALID_INPUT");
      expect(ended.error?.message).toMatch(/budget/);
      expect((await store.listTransitions(created.run.id)).map((t) => t.to)).toEqual(["PENDING", "RUNNING", "FAILED"]);
    });
  });
});
