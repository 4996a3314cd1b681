import type { WaitRecord } from "../../src/api/http-api.ts";
import { StatusPill, Time } from "./components.tsx";
import { actorLabel, oneLine } from "./format.ts";

/** Waits that ended: how, with what, by whom. */
export function ResolvedWaits(props: { waits: WaitRecord[] }) {
  const done = props.waits.filter((w) => w.status !== "open");
  if (done.length === 0) return null;
  return (
    <details class="resolved">
      <summary>
        {done.length} resolved wait{done.length === 1 ? "" : "s"}
      </summary>
      <table class="table compact" data-testid="resolved-waits">
        <thead>
          <tr>
            <th>Wait</th>
            <th>Kind</th>
            <th>Name</th>
            <th>Outcome</th>
            <th>Value</th>
            <th>By</th>
            <th>At</th>
          </tr>
        </thead>
        <tbody>
          {done.map((w) => (
            <tr key={w.id}>
              <td class="mono">{w.id}</td>
              <td>{w.kind === "user" ? "question" : w.kind}</td>
              <td class="wrap">{w.name}</td>
              <td>
                <StatusPill status={w.resolution?.outcome ?? w.status} />
              </td>
              <td class="mono small wrap">{oneLine(w.resolution?.value, 60)}</td>
              <td>
                {w.resolution?.by ? actorLabel(w.resolution.by) : ""}
                {w.resolution?.note && <div class="muted small">{w.resolution.note}</div>}
              </td>
              <td class="small">
                <Time at={w.resolution?.at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
