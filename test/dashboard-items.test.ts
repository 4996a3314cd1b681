import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserSkipReason, type DevDashboard, startDevDashboard } from "./helpers/dashboard-dev.ts";

/**
 * The dashboard that does the job (issue 25, item 4), each item in a real Chromium against
 * `cairn dev` started as a user starts it (test/helpers/dashboard-dev.ts): the start form built
 * from the workflow's input schema, the step timeline with a retry and a wait, reconciling an
 * effect with its result and receipt after a confirmation, the identity switcher and the refused
 * approval that names who may decide, what a viewer is not shown, the conversation view of model
 * steps, search by run id, key and agent, and durations worded as the CLI words them.
 */

const skip = browserSkipReason();
if (skip) console.warn(`dashboard item tests skipped: ${skip}`);

describe.skipIf(skip !== undefined)("the dashboard's items in chromium", () => {
  let dev: DevDashboard;

  beforeAll(async () => {
    dev = await startDevDashboard();
  }, 60_000);

  afterAll(async () => {
    await dev?.close();
  });

  const open = (hash: string): Promise<Page> => dev.open(hash);

  it("starts a run from a form built from the input schema, and shows its retry and wait on the timeline", async () => {
    const page = await open("/runs");
    try {
      await page.getByTestId("start-agent").selectOption("shop");
      await page.getByTestId("start-workflow").selectOption("order");
      await page.getByTestId("start-field-customer").fill("ana");
      await page.getByTestId("start-field-sku").fill("tea-42");
      await page.getByTestId("start-field-quantity").fill("3");
      await page.getByTestId("start-field-express").check();
      await page.getByTestId("start-submit").click();
      await expect.poll(() => page.url(), { timeout: 10_000 }).toContain("#/runs/");
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toContain("COMPLETED");
      const id = decodeURIComponent(page.url().split("#/runs/")[1] ?? "");
      const { run } = await dev.get(`/api/runs/${id}`);
      expect(run.input).toEqual({ customer: "ana", sku: "tea-42", quantity: 3, express: true });
      // The first attempt of the stock check failed and was retried after a backoff; the sleep is a wait.
      await page.getByTestId("gantt").waitFor();
      expect(await page.getByTestId("gantt-attempt-1-1").getAttribute("data-kind")).toBe("failed");
      expect(await page.getByTestId("gantt-attempt-1-2").getAttribute("data-kind")).toBe("ok");
      expect(await page.getByTestId("gantt-retry-1-2").getAttribute("data-kind")).toBe("retry");
      const waits = (await dev.get(`/api/runs/${id}/waits`)).waits as { id: string; kind: string }[];
      const timer = waits.find((w) => w.kind === "timer");
      expect(timer).toBeDefined();
      expect(await page.getByTestId(`gantt-wait-${timer?.id}`).count()).toBe(1);
    } finally {
      await page.context().close();
    }
  }, 60_000);

  it("reconciles an unknown effect with its outcome, result and receipt after showing what the workflow receives", async () => {
    const { id } = await dev.start("shop", "charge", { customer: "ana", amount: 42 });
    await dev.untilState(id, "NEEDS_RECONCILIATION");
    const [entry] = (await dev.get(`/api/runs/${id}/effects`)).effects as { effect: { id: string } }[];
    const effect = entry?.effect.id ?? "";
    const page = await open(`/runs/${id}`);
    try {
      await page.getByTestId(`reconcile-${effect}`).click();
      const review = page.getByTestId(`reconcile-review-${effect}`);
      expect(await review.isDisabled()).toBe(true); // no outcome chosen yet
      await page.getByTestId(`reconcile-outcome-applied-${effect}`).check();
      await page.getByTestId(`reconcile-result-${effect}`).fill('{"chargeId": "ch_42"');
      expect(await review.isDisabled()).toBe(true); // the result is not JSON
      await page.getByTestId(`reconcile-result-${effect}`).fill('{"chargeId": "ch_42"}');
      await page.getByTestId(`reconcile-receipt-${effect}`).fill('{"networkRef": "NR-9"}');
      await review.click();
      const receives = (await page.getByTestId(`reconcile-receives-${effect}`).textContent()) ?? "";
      expect(JSON.parse(receives)).toEqual({ chargeId: "ch_42" });
      // Nothing is sent before the confirmation.
      expect((await dev.get(`/api/runs/${id}`)).run.state).toBe("NEEDS_RECONCILIATION");
      await page.getByTestId(`reconcile-confirm-button-${effect}`).click();
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toContain("COMPLETED");
    } finally {
      await page.context().close();
    }
    const { run } = await dev.get(`/api/runs/${id}`);
    expect(run.output).toEqual({ charged: "ch_42" });
    const [settled] = (await dev.get(`/api/runs/${id}/effects`)).effects as {
      effect: { receipt: unknown; status: string };
    }[];
    expect(settled?.effect).toMatchObject({ status: "applied", receipt: { networkRef: "NR-9" } });
  }, 60_000);

  it("names who may decide a refused approval, switches to that identity and approves as it", async () => {
    const { id } = await dev.start("expenses", "submit", { employee: "ana", amount: 420, purpose: "client dinner" });
    const page = await open(`/runs/${id}`);
    try {
      await page.getByTestId("answer-field-costCenter").fill("CC-1234");
      await page.getByTestId("answer-submit").click();
      await page.getByTestId("pending-approval").waitFor({ timeout: 15_000 });
      expect(await page.getByTestId("me").textContent()).toContain("local");
      expect(await page.getByTestId("approval-not-listed").textContent()).toContain("only finance-lead may decide");
      // Worded as the CLI words it: 48 hours is "2d", not "1d 23h".
      expect(await page.getByTestId("approval-expiry").textContent()).toContain("(2d left)");
      await page.getByTestId("approve-button").click();
      await expect
        .poll(() => page.getByTestId("approval-error").textContent(), { timeout: 10_000 })
        .toContain("its approvers are finance-lead");
      await page.getByTestId("act-as-finance-lead").click();
      await expect.poll(() => page.getByTestId("me").textContent(), { timeout: 10_000 }).toContain("finance-lead");
      await page.getByTestId("approve-button").click();
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toContain("COMPLETED");
    } finally {
      await page.context().close();
    }
    const { transitions } = await dev.get(`/api/runs/${id}/transitions`);
    const resumedBy = (transitions as { to: string; actor: { id: string } }[])
      .filter((t) => t.to === "RESUMING")
      .map((t) => t.actor.id);
    expect(resumedBy).toEqual(["local", "finance-lead"]);
  }, 60_000);

  it("does not show a viewer what a viewer may not do", async () => {
    const { id } = await dev.start("expenses", "submit", { employee: "bo", amount: 80, purpose: "taxi home" });
    await dev.untilState(id, "PAUSED");
    const page = await open("/runs");
    try {
      await page.getByTestId("start-run-form").waitFor();
      await page.getByTestId("identity-subject").fill("vera");
      await page.getByTestId("identity-role").selectOption("viewer");
      await page.getByTestId("identity-apply").click();
      await expect.poll(() => page.getByTestId("me").textContent(), { timeout: 10_000 }).toContain("vera (viewer)");
      await page.getByTestId(`run-row-${id}`).waitFor();
      expect(await page.getByTestId("start-run-form").count()).toBe(0);
      await page.getByTestId(`run-row-${id}`).locator("a").click();
      await page.getByTestId("pending-approval").waitFor({ timeout: 10_000 });
      expect(await page.getByTestId("not-allowed").count()).toBe(1);
      for (const hidden of ["approve-button", "deny-button", "cancel-button", "fork-button"]) {
        expect(await page.getByTestId(hidden).count(), hidden).toBe(0);
      }
      expect(await page.getByTestId("export-contract").count()).toBe(1);
    } finally {
      await page.context().close();
    }
  }, 60_000);

  it("shows a model step as the conversation it was", async () => {
    const { id } = await dev.start("researcher", "answer", {
      question: "How does a durable runtime avoid paying twice after a crash?",
    });
    await dev.untilState(id, "COMPLETED");
    const steps = (await dev.get(`/api/runs/${id}/steps`)).steps as { seq: number; kind: string; result: any }[];
    const calling = steps.find((s) => s.kind === "llm" && s.result?.toolCalls?.length > 0);
    const last = steps.filter((s) => s.kind === "llm").at(-1);
    expect(calling && last).toBeTruthy();
    const page = await open(`/runs/${id}`);
    try {
      await page.getByTestId(`step-row-${calling?.seq}`).click();
      const first = page.getByTestId(`conversation-${calling?.seq}`);
      await first.waitFor();
      expect(await first.getByTestId("message-system").count()).toBe(1);
      expect(await first.getByTestId("message-user").textContent()).toContain("paying twice");
      expect(await first.getByTestId("tool-call").first().textContent()).toContain(calling?.result.toolCalls[0].name);
      await page.getByTestId(`step-row-${last?.seq}`).click();
      const final = page.getByTestId(`conversation-${last?.seq}`);
      expect(await final.getByTestId("message-tool").count()).toBeGreaterThan(0);
      expect(await page.getByTestId(`conversation-answer-${last?.seq}`).textContent()).toContain(
        String(last?.result.text).slice(0, 30),
      );
    } finally {
      await page.context().close();
    }
  }, 60_000);

  it("finds runs by run id, idempotency key and agent", async () => {
    const keyed = await dev.start(
      "shop",
      "order",
      { customer: "cy", sku: "mug", quantity: 1, express: false },
      "order-4711",
    );
    const other = await dev.start("expenses", "submit", { employee: "di", amount: 12, purpose: "coffee" });
    const page = await open("/runs");
    try {
      const find = async (text: string) => {
        await page.getByTestId("run-search-input").fill(text);
        await page.getByTestId("run-search-submit").click();
      };
      await find("order-4711");
      await expect.poll(() => page.url(), { timeout: 10_000 }).toContain(`#/runs/${keyed.id}`);
      await page.goto(`${dev.url}/#/runs`);
      await find(other.id);
      await expect.poll(() => page.url(), { timeout: 10_000 }).toContain(`#/runs/${other.id}`);
      await page.goto(`${dev.url}/#/runs`);
      await find("shop");
      await expect.poll(() => page.url(), { timeout: 10_000 }).toContain("agent=shop");
      await page.getByTestId(`run-row-${keyed.id}`).waitFor();
      expect(await page.getByTestId(`run-row-${other.id}`).count()).toBe(0);
      await find("no-such-thing");
      expect(await page.getByTestId("run-search-error").textContent()).toContain("no agent has that name");
    } finally {
      await page.context().close();
    }
  }, 60_000);
});
