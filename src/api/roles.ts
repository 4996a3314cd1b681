/**
 * The roles a bearer token carries and what each may do over the HTTP API: the server checks
 * them (`server/auth.ts`), clients show them (`/api/me`) and offer only what they allow.
 */

/** What a token may do. Every role may read; `admin` may do everything. */
export const ROLES = ["viewer", "operator", "approver", "admin"] as const;

/** One role. */
export type Role = (typeof ROLES)[number];

/**
 * What a route needs: `read` (every GET), `operate` (start, signal, answer, cancel, resume,
 * reconcile, accept, reject), `approve` (approve, deny) or `administer` (import a run, move one
 * out: an import writes a whole record as given, its budget, actors and decisions included).
 */
export type Permission = "read" | "operate" | "approve" | "administer";

/** The permissions of each role. A token with several roles has the union. */
export const ROLE_PERMISSIONS: { readonly [R in Role]: readonly Permission[] } = {
  viewer: ["read"],
  operator: ["read", "operate"],
  approver: ["read", "approve"],
  admin: ["read", "operate", "approve", "administer"],
};
