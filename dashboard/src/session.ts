import { createContext } from "preact";
import { useContext } from "preact/hooks";
import { ROLE_PERMISSIONS, type Permission as RolePermission } from "../../src/api/http-api.ts";
import type { Me } from "./api.ts";

/**
 * Who is signed in (`/api/me`), for the whole page. The roles decide which actions are shown,
 * by the server's table (`ROLE_PERMISSIONS`): `operate` (start, signal, answer, cancel, resume,
 * reconcile, accept, reject) needs operator or admin, `approve` (approve, deny) approver or admin.
 * Before /api/me answers, everything is offered and the server decides.
 */
export const MeContext = createContext<Me | null>(null);

/** What an action needs (every role may read). */
export type Permission = Exclude<RolePermission, "read">;

export function useMe(): Me | null {
  return useContext(MeContext);
}

/** Whether whoever the page acts as may do `permission` (true while unknown): what it may not do is not shown. */
export function useCan(permission: Permission): boolean {
  const me = useMe();
  if (!me) return true;
  // `?.`: a role this build does not know (a newer server) grants nothing here.
  return me.roles.some((role) => ROLE_PERMISSIONS[role]?.includes(permission));
}

/** Why an action is not offered, for a tooltip. */
export function refusal(permission: Permission): string {
  return permission === "approve"
    ? "your roles do not allow approving (approver or admin)"
    : "your roles do not allow acting on runs (operator or admin)";
}
