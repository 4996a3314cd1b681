import { type RunRecord, slotWait } from "../../src/api/http-api.ts";
import { Age, StateBadge, Time } from "./components.tsx";
import { money, shortId } from "./format.ts";
import { runHref } from "./router.ts";

/** The runs, newest first; a row just changed by a live event flashes. */
export function RunsTable(props: { runs: RunRecord[]; flash: ReadonlySet<string> }) {
  return (
    <div class="table-wrap">
      <table class="table runs" data-testid="runs-table">
        <thead>
          <tr>
            <th>Run</th>
            <th>Agent / workflow</th>
            <th>State</th>
            <th>Paused reason / waiting</th>
            <th>Age</th>
            <th class="num">Cost</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {props.runs.map((run) => (
            <RunRow key={run.id} run={run} flash={props.flash.has(run.id)} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One run; a click anywhere but on its link opens it too. */
function RunRow(props: { run: RunRecord; flash: boolean }) {
  const { run } = props;
  // A keyed run not yet claimed: in the words `cairn runs` prints under it.
  const wait = slotWait(run, Date.now());
  const slot = wait && (
    <span class="slot-wait" data-testid="run-slot-wait">
      {wait}
    </span>
  );
  return (
    <tr
      data-testid={`run-row-${run.id}`}
      class={props.flash ? "flash" : undefined}
      onClick={(e) => {
        if ((e.target as HTMLElement).closest("a")) return;
        location.hash = runHref(run.id);
      }}
    >
      <td>
        <a href={runHref(run.id)} class="mono" title={run.id}>
          {shortId(run.id)}
        </a>
      </td>
      <td>
        <span class="agent">{run.agent}</span>
        <span class="muted"> / </span>
        {run.workflow}
      </td>
      <td>
        <StateBadge state={run.state} testid="run-state" />
        {run.acceptance && (
          <span
            class={`pill tone-${run.acceptance.decision === "accepted" ? "green" : "red"}`}
            title={run.acceptance.note}
          >
            {run.acceptance.decision}
          </span>
        )}
      </td>
      <td>{run.pausedReason ?? slot ?? <span class="muted">—</span>}</td>
      <td>
        <Age at={run.createdAt} />
      </td>
      <td class="num">{money(run.usage?.costUsd)}</td>
      <td class="small">
        <Time at={run.updatedAt} />
      </td>
    </tr>
  );
}
