import { describe, expect, it } from "vitest";
import { expenses } from "../examples/expense-approval.ts";
import { approvalDigest, InvalidInputError } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await read();
    if (ok(value)) return value;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error("condition not met in time");
}

forEachBackend((under) => {
  const { runtimes } = under;
  describe("examples/expense-approval.ts", () => {
    it("asks for a cost center, refuses a bad one, waits for finance's approval of the exact payment, then pays", async () => {
      const rt = runtimes.make({ agents: [expenses] });
      const run = await rt.run(expenses, "submit", { employee: "ana", amount: 420, purpose: "client dinner" });
      const [question] = await until(
        () => rt.waits(run.id),
        (w) => w.length === 1,
      );
      expect(question?.kind).toBe("user");
      const refused = await rt.answer(run.id, "w2", { costCenter: "sales" }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(InvalidInputError);
      expect((refused as Error).message).toMatch(/costCenter: .*a cost center looks like "CC-1234"/);
      expect((await rt.getRun(run.id)).pausedReason).toBe("awaiting_user");
      await rt.answer(run.id, "w2", { costCenter: "CC-1001" }, { by: "ana" });
      const waits = await until(
        () => rt.waits(run.id),
        (w) => w.length === 2,
      );
      const approval = waits[1];
      expect(approval?.details).toMatchObject({
        action: "reimburse",
        payload: { employee: "ana", amount: 420, costCenter: "CC-1001" },
        approvers: ["finance-lead"],
      });
      const digest = approvalDigest({ employee: "ana", amount: 420, costCenter: "CC-1001" });
      await rt.approve(run.id, "w3", { by: "finance-lead", digest });
      expect(await run.result({ timeoutMs: 5000 })).toMatchObject({
        status: "reimbursed",
        payment: { employee: "ana", amount: 420, costCenter: "CC-1001" },
      });
      const reasons = (await rt.history(run.id)).transitions.map((t) => t.pausedReason).filter(Boolean);
      expect(reasons).toEqual(["awaiting_user", "awaiting_approval"]);
      await rt.shutdown();
    });
  });
});
