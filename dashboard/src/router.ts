import { useEffect, useState } from "preact/hooks";

/** A tiny hash router: `#/runs?…` (the runs table), `#/runs/<id>` (a run) and `#/schedules`. */

export type Route =
  | { page: "runs"; query: URLSearchParams }
  | { page: "run"; id: string; query: URLSearchParams }
  | { page: "schedules"; query: URLSearchParams };

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, "");
  const [path = "", search = ""] = raw.split("?", 2) as [string?, string?];
  const query = new URLSearchParams(search);
  const match = /^\/runs\/(.+)$/.exec(path);
  if (match?.[1]) return { page: "run", id: decodeURIComponent(match[1]), query };
  if (path === "/schedules") return { page: "schedules", query };
  return { page: "runs", query };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseHash(location.hash));
    addEventListener("hashchange", onChange);
    return () => removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

export function runHref(id: string): string {
  return `#/runs/${encodeURIComponent(id)}`;
}

export const SCHEDULES_HREF = "#/schedules";

export function runsHref(query?: URLSearchParams): string {
  const q = query?.toString();
  return q ? `#/runs?${q}` : "#/runs";
}

export function navigate(href: string): void {
  location.hash = href.replace(/^#/, "");
}

/** Replaces the hash without adding a history entry (filters). */
export function replaceHash(href: string): void {
  history.replaceState(null, "", href);
  dispatchEvent(new HashChangeEvent("hashchange"));
}
