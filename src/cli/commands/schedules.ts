import type { ScheduleView } from "../../runtime/runtime-schedules.ts";
import { usageError } from "../cli-error.ts";
import { withClient } from "../client.ts";
import type { Command } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import { type Io, table, until } from "../format.ts";

const ACTIONS = ["list", "show", "pause", "resume", "trigger", "delete"] as const;

/** `cairn schedules`: the schedules in the database, and what an operator does to one. */
export const schedulesCommand: Command = {
  name: "schedules",
  summary: "list schedules; show, pause, resume, trigger or delete one",
  usage:
    "cairn schedules [list | show <id> | pause <id> | resume <id> | trigger <id> | delete <id>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "list      every schedule: its timing, policies, state and next fire time (the default)",
    "show      one schedule with its next ten fire times, its last tick and its last run",
    "pause     no tick fires until resume",
    "resume    ticks fire again from the next one after now (those missed while paused do not)",
    "trigger   start a run now, whatever the timing, overlap policy or pause; a worker running the",
    "          schedule's agent starts it (`cairn worker`)",
    "delete    delete the schedule; its runs stay",
    "Schedules are defined in code (`runtime.schedule(...)`) or over HTTP (PUT /api/schedules/{id}).",
  ],
  positionals: [],
  variadic: true,
  options: { ...DATABASE_OPTIONS },
  async run({ positionals, values }, io) {
    const [action = "list", id, extra] = positionals;
    if (!(ACTIONS as readonly string[]).includes(action)) {
      throw usageError(`unknown action "${action}" (one of ${ACTIONS.join(", ")})`);
    }
    if (action !== "list" && id === undefined) throw usageError(`cairn schedules ${action} needs a schedule id`);
    if (extra !== undefined || (action === "list" && id !== undefined)) {
      throw usageError(`unexpected argument "${extra ?? id}"`);
    }
    return withClient(values, async ({ runtime }) => {
      const s = runtime.schedules;
      const sid = id as string;
      if (action === "list") return listSchedules(await s.list(), io);
      if (action === "show") return showSchedule(await s.get(sid), io);
      if (action === "pause") {
        await s.pause(sid);
        io.out(`schedule ${sid} paused`);
      }
      if (action === "resume") io.out(`schedule ${sid} resumed; next tick ${when((await s.resume(sid)).nextAt)}`);
      if (action === "delete") {
        await s.delete(sid);
        io.out(`schedule ${sid} deleted (its runs stay)`);
      }
      if (action === "trigger") {
        const { runId, tickAt } = await s.trigger(sid);
        io.out(
          runId
            ? `schedule ${sid} triggered: run ${runId}`
            : `schedule ${sid} triggered at ${new Date(tickAt).toISOString()}: a worker running its agent starts the run (key schedule:${sid}@${new Date(tickAt).toISOString()})`,
        );
      }
      return 0;
    });
  },
};

function timing(s: ScheduleView): string {
  return s.everyMs !== null ? `every ${s.everyMs / 1000}s` : `${s.cron} ${s.timeZone}`;
}

function when(at: number | null): string {
  return at === null ? "none" : `${new Date(at).toISOString()} (${until(at)})`;
}

function listSchedules(schedules: ScheduleView[], io: Io): number {
  if (schedules.length === 0) {
    io.out("no schedules");
    return 0;
  }
  const rows = schedules.map((s) => [
    s.id,
    `${s.agent}/${s.workflow}`,
    timing(s),
    s.paused ? "paused" : "active",
    s.paused ? "-" : when(s.nextAt),
  ]);
  for (const line of table(["ID", "TARGET", "TIMING", "STATE", "NEXT"], rows)) io.out(line);
  return 0;
}

function showSchedule(s: ScheduleView, io: Io): number {
  io.out(`schedule ${s.id}: ${s.agent}/${s.workflow}, ${timing(s)}${s.paused ? ", paused" : ""}`);
  io.out(`  overlap ${s.overlap}, catch-up ${s.catchUp}${s.catchUp === "all" ? ` (at most ${s.catchUpLimit})` : ""}`);
  io.out(`  input ${JSON.stringify(s.input)}`);
  io.out(
    // The last run may come from a trigger rather than the last tick: two facts, not a pair.
    `  last tick ${s.lastTickAt === null ? "none" : new Date(s.lastTickAt).toISOString()}; last run ${s.lastRunId ?? "none"}`,
  );
  if (s.bufferedAt !== null)
    io.out(`  buffered tick ${new Date(s.bufferedAt).toISOString()} (starts when the last run ends)`);
  if (s.pendingAt !== null) io.out(`  tick ${new Date(s.pendingAt).toISOString()} being started`);
  io.out(
    s.nextTimes.length > 0
      ? "  next ten fire times:"
      : "  no next fire time (paused, or the cron expression has no more)",
  );
  for (const at of s.nextTimes) io.out(`    ${new Date(at).toISOString()}`);
  return 0;
}
