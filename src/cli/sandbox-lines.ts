import type { ContractIsolation, ContractSandbox } from "../core/run-contract.ts";
import { clock, table } from "./format.ts";

/**
 * The sandboxes section of `cairn show` (DESIGN §4, *Sandboxes*): each sandbox of the run with its
 * kind, network and limits, how often it was lost and restored, and whether it is destroyed; a
 * sandbox that isolated nothing (the local provider) is said to be NOT ISOLATED, loudly.
 */
export function sandboxLines(isolation: ContractIsolation): string[] {
  if (isolation.sandboxes.length === 0) return [];
  const lines = ["", `sandboxes (${isolation.sandboxes.length})`];
  const rows = isolation.sandboxes.map((s) => [
    s.name,
    s.ids.at(-1) ?? s.info.id,
    s.info.isolated ? s.info.kind : `${s.info.kind}: NOT ISOLATED`,
    s.info.network ? "on" : "off",
    limitsLabel(s),
    `${s.losses.length}/${s.restores.length}`,
    s.destroyedAt ? `${s.destroyedBy} ${clock(Date.parse(s.destroyedAt))}` : "not destroyed",
  ]);
  lines.push(...table(["NAME", "ID", "KIND", "NETWORK", "LIMITS", "LOST/RESTORED", "DESTROYED"], rows));
  if (isolation.isolated === false) {
    lines.push("  !! NOT ISOLATED: a local sandbox runs its commands as this host's user, with its files and network");
  }
  return lines;
}

function limitsLabel(s: ContractSandbox): string {
  const l = s.info.limits;
  const parts = [
    l.cpuSeconds !== undefined ? `cpu ${l.cpuSeconds}s` : "",
    l.memoryBytes !== undefined ? `mem ${Math.round(l.memoryBytes / 2 ** 20)}MiB` : "",
    l.processes !== undefined ? `procs ${l.processes}` : "",
    l.fileSizeBytes !== undefined ? `file ${Math.round(l.fileSizeBytes / 2 ** 20)}MiB` : "",
  ].filter(Boolean);
  return parts.join(" ") || "none";
}
