import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserSkipReason, type DevDashboard, startDevDashboard } from "./helpers/dashboard-dev.ts";

/**
 * The dashboard's parts of flow control and schedules (issue 28), in a real Chromium against
 * `cairn dev` started as a user starts it (test/helpers/dashboard-dev.ts): a run waiting for a slot
 * of its concurrency key says so, with its key, limit and priority, in the runs list and on its
 * page, until the run holding the slot ends; the schedules page shows each schedule's timing,
 * policies, state, last tick and its run and next ten times, triggers a run after a confirmation,
 * pauses and resumes, shows a refusal in the server's words, and shows a viewer no action.
 */

const skip = browserSkipReason();
if (skip) console.warn(`dashboard schedule tests skipped: ${skip}`);

describe.skipIf(skip !== undefined)("the dashboard's flow control and schedules in chromium", () => {
  let dev: DevDashboard;

  beforeAll(async () => {
    dev = await startDevDashboard();
  }, 60_000);

  afterAll(async () => {
    await dev?.close();
  });

  const open = (hash: string): Promise<Page> => dev.open(hash);

  /** A request to the dev server as its own subject (an admin); the parsed body. */
  async function call(method: string, path: string, body: unknown): Promise<any> {
    const response = await fetch(`${dev.url}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const parsed = await response.json();
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(parsed)}`);
    return parsed;
  }

  it("shows a run waiting for a slot with its key, limit and priority, in the list and on its page, until it gets one", async () => {
    const flow = { concurrencyKey: "customer:acme", concurrencyLimit: 1 };
    const held = (await call("POST", "/api/runs", { agent: "shop", workflow: "hold", input: { ms: 60_000 }, ...flow }))
      .run;
    await dev.untilState(held.id, "RUNNING");
    const waiting = (
      await call("POST", "/api/runs", { agent: "shop", workflow: "hold", input: { ms: 10 }, ...flow, priority: 3 })
    ).run;
    // Its key's one slot is held by a RUNNING run: it cannot be claimed.
    expect((await dev.get(`/api/runs/${waiting.id}`)).run.state).toBe("PENDING");
    // The words `cairn runs` prints under such a run (core/flow-control.ts: slotWait).
    const words = 'waiting for a slot of key "customer:acme" (limit 1), priority 3';
    const page = await open("/runs");
    try {
      const row = page.getByTestId(`run-row-${waiting.id}`);
      await expect.poll(() => row.getByTestId("run-slot-wait").textContent(), { timeout: 10_000 }).toBe(words);
      await page.getByTestId(`run-row-${held.id}`).waitFor();
      expect(await page.getByTestId(`run-row-${held.id}`).getByTestId("run-slot-wait").count()).toBe(0);
      await row.locator("a").click();
      await expect.poll(() => page.getByTestId("run-slot-wait").textContent(), { timeout: 10_000 }).toBe(words);
      expect(await page.getByTestId("run-state").textContent()).toBe("PENDING");
      expect(await page.getByTestId("run-flow").textContent()).toBe(
        'concurrency key "customer:acme" (limit 1), priority 3',
      );
      // The holder stopped, its slot goes to the waiting run, which runs and completes.
      await call("POST", `/api/runs/${held.id}/cancel`, { reason: "free the slot" });
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 20_000 }).toBe("COMPLETED");
      expect(await page.getByTestId("run-slot-wait").count()).toBe(0);
    } finally {
      await page.context().close();
    }
    await dev.untilState(held.id, "CANCELLED");
  }, 60_000);

  it("shows a call waiting for a slot of its rate limit on the run's page, until the run is cancelled", async () => {
    // `quote` is under 1 per minute: the first call takes the slot, the second waits for the next.
    const { id } = await dev.start("shop", "quotes", { skus: ["a-1", "b-2"] });
    const page = await open(`/runs/${id}`);
    try {
      const wait = page.getByTestId("rate-wait-2");
      await expect
        .poll(() => wait.textContent(), { timeout: 15_000 })
        .toMatch(
          /^step 2 tool "quote": attempt 1 waits for a slot of rate limit "tool:shop\.quote" \(1 per 1m\), in (1m|\d{1,2}s)$/,
        );
      expect(await page.getByTestId("run-state").textContent()).toBe("RUNNING");
      // A cancel ends the wait at once; the call is never made, and the notice goes with the run.
      await call("POST", `/api/runs/${id}/cancel`, { reason: "no more quotes" });
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toBe("CANCELLED");
      expect(await page.getByTestId("rate-wait-2").count()).toBe(0);
      const { steps } = await dev.get(`/api/runs/${id}/steps`);
      expect(steps.map((s: { name: string; attempts: unknown[] }) => [s.name, s.attempts.length])).toEqual([
        ["quote", 1],
      ]);
    } finally {
      await page.context().close();
    }
  }, 60_000);

  it("lists a schedule's timing, policies and next ten times; triggers after a confirmation, pauses, resumes", async () => {
    const { schedule } = await call("PUT", "/api/schedules/nightly-orders", {
      agent: "shop",
      workflow: "order",
      input: { customer: "ana", sku: "tea", quantity: 1, express: false },
      cron: "0 2 * * *",
      timeZone: "Europe/Paris",
      overlap: "bufferOne",
      catchUp: "all",
      catchUpLimit: 5,
    });
    await call("PUT", "/api/schedules/poll-inbox", { agent: "shop", workflow: "order", every: "90s", paused: true });
    const page = await open("/runs");
    try {
      await page.getByTestId("nav-schedules").click();
      const card = page.getByTestId("schedule-nightly-orders");
      await card.waitFor({ timeout: 10_000 });
      expect(await card.getByTestId("schedule-target").textContent()).toBe("shop / order");
      expect(await card.getByTestId("schedule-timing").textContent()).toBe("0 2 * * * in Europe/Paris");
      expect(await card.getByTestId("schedule-overlap").textContent()).toMatch(/^bufferOne · /);
      expect(await card.getByTestId("schedule-catch-up").textContent()).toMatch(/^all \(at most 5\) · /);
      expect(await card.getByTestId("schedule-state").textContent()).toBe("active");
      expect(await card.getByTestId("schedule-last-run").textContent()).toBe("none yet");
      const times = card.getByTestId("schedule-next-times").locator("li");
      const shown: number[] = [];
      for (const item of await times.all()) shown.push(Number(await item.getAttribute("data-at")));
      expect(schedule.nextTimes).toHaveLength(10);
      expect(shown).toEqual(schedule.nextTimes);
      // Each in the cron's zone: 02:00 in Paris, whatever the browser's zone.
      for (const text of await times.allTextContents()) expect(text).toMatch(/ 02:00:00 Europe\/Paris$/);

      const other = page.getByTestId("schedule-poll-inbox");
      expect(await other.getByTestId("schedule-timing").textContent()).toBe("every 90s");
      expect(await other.getByTestId("schedule-state").textContent()).toBe("paused");
      expect(await other.getByTestId("schedule-no-next").textContent()).toBe("none while paused");
      expect(await other.getByTestId("schedule-resume").count()).toBe(1);

      await card.getByTestId("schedule-trigger").click();
      await card.getByTestId("schedule-trigger-confirmation").waitFor();
      // Nothing is sent before the confirmation.
      expect((await dev.get("/api/schedules/nightly-orders")).schedule.lastRunId).toBeNull();
      await card.getByTestId("schedule-trigger-confirm").click();
      const started = card.getByTestId("schedule-triggered").locator("a");
      await started.waitFor({ timeout: 10_000 });
      const runId = (await started.textContent()) ?? "";
      const after = (await dev.get("/api/schedules/nightly-orders")).schedule;
      expect(after.lastRunId).toBe(runId);
      expect((await dev.get(`/api/runs/${runId}`)).run.meta.schedule).toBe("nightly-orders");
      // The list is reloaded after the action: the last run, its state and the tick it was for.
      await expect.poll(() => card.getByTestId("schedule-last-run").textContent(), { timeout: 10_000 }).toBe(runId);
      expect(await card.getByTestId("schedule-last-run-tick").locator("time").getAttribute("datetime")).toBe(
        (await dev.get(`/api/runs/${runId}`)).run.meta.scheduledFor,
      );
      // A trigger is not a tick of the timing: the last tick stays none.
      expect(after.lastTickAt).toBeNull();
      expect(await card.getByTestId("schedule-last-tick").textContent()).toBe("none yet");
      await expect
        .poll(() => card.getByTestId("schedule-last-run-state").textContent(), { timeout: 20_000 })
        .toBe("COMPLETED");

      await card.getByTestId("schedule-pause").click();
      await expect.poll(() => card.getByTestId("schedule-state").textContent(), { timeout: 10_000 }).toBe("paused");
      expect(await card.getByTestId("schedule-no-next").textContent()).toBe("none while paused");
      expect((await dev.get("/api/schedules/nightly-orders")).schedule.paused).toBe(true);
      await card.getByTestId("schedule-resume").click();
      await expect.poll(() => card.getByTestId("schedule-state").textContent(), { timeout: 10_000 }).toBe("active");
      expect(await times.count()).toBe(10);
      expect((await dev.get("/api/schedules/nightly-orders")).schedule.paused).toBe(false);

      await card.getByTestId("schedule-last-run").click();
      await expect.poll(() => page.url(), { timeout: 10_000 }).toContain(`#/runs/${runId}`);
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toBe("COMPLETED");
    } finally {
      await page.context().close();
    }
  }, 60_000);

  it("shows a refused trigger in the server's words, and a viewer no schedule actions", async () => {
    // No worker of this server runs "archive": a trigger's tick waits for one, and a second is refused.
    await call("PUT", "/api/schedules/archive-sweep", { agent: "archive", workflow: "sweep", every: "1h" });
    const page = await open("/schedules");
    try {
      const card = page.getByTestId("schedule-archive-sweep");
      await card.waitFor({ timeout: 10_000 });
      const trigger = async () => {
        await card.getByTestId("schedule-trigger").click();
        await card.getByTestId("schedule-trigger-confirm").click();
      };
      await trigger();
      await expect
        .poll(() => card.getByTestId("schedule-triggered").textContent(), { timeout: 10_000 })
        .toContain("a worker running archive starts its run");
      await card.getByTestId("schedule-pending").waitFor();
      await trigger();
      await expect
        .poll(() => card.getByTestId("schedule-error").textContent(), { timeout: 10_000 })
        .toBe('schedule "archive-sweep" has a tick being started; trigger it again in a moment');

      await page.getByTestId("identity-subject").fill("vera");
      await page.getByTestId("identity-role").selectOption("viewer");
      await page.getByTestId("identity-apply").click();
      await expect.poll(() => page.getByTestId("me").textContent(), { timeout: 10_000 }).toContain("vera (viewer)");
      await card.waitFor();
      await page.getByTestId("schedules-read-only").waitFor();
      expect(await card.getByTestId("schedule-timing").textContent()).toBe("every 1h");
      for (const hidden of ["schedule-actions", "schedule-pause", "schedule-resume", "schedule-trigger"]) {
        expect(await page.getByTestId(hidden).count(), hidden).toBe(0);
      }
    } finally {
      await page.context().close();
    }
  }, 60_000);
});
