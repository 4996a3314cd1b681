/**
 * The research agent's library: a few short notes on durable execution, searched by word
 * overlap. Local and deterministic, so the example needs no network unless a real model is set.
 */

export interface Note {
  id: string;
  title: string;
  text: string;
}

export const NOTES: readonly Note[] = [
  {
    id: "n1",
    title: "Checkpoints",
    text: "A durable runtime records the result of every step before the next one starts. After a crash the workflow is replayed: recorded steps return their saved results and only the unfinished step runs again.",
  },
  {
    id: "n2",
    title: "Idempotency keys",
    text: "An external effect such as a payment carries an idempotency key that stays the same across retries and replays, so the service applies it at most once. When the outcome is unknown, the runtime asks the service or an operator before doing anything else.",
  },
  {
    id: "n3",
    title: "Leases and fencing",
    text: "Workers claim runs with a lease that they renew. A worker whose lease lapsed, after a long pause or a partition, has its late writes refused by the lease epoch, so two workers never both write the same run.",
  },
  {
    id: "n4",
    title: "Human approvals",
    text: "A run that needs a person pauses with a reason and holds no compute. The approval is bound to a digest of exactly what is approved and expires; a late decision is refused.",
  },
  {
    id: "n5",
    title: "Cost of a step",
    text: "The floor of a checkpoint is one synchronous commit. SQLite in WAL mode commits in tens of microseconds on a fast disk; PostgreSQL commits over the network take about a hundred microseconds or more.",
  },
];

/** Notes ranked by how many words of the query they share (at most `limit`). */
export function searchNotes(query: string, limit = 3): { id: string; title: string; score: number }[] {
  const words = new Set(query.toLowerCase().match(/[a-z]{3,}/g) ?? []);
  return NOTES.map((note) => {
    const text = `${note.title} ${note.text}`.toLowerCase();
    let score = 0;
    for (const word of words) if (text.includes(word)) score++;
    return { id: note.id, title: note.title, score };
  })
    .filter((hit) => hit.score > 0)
    .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id))
    .slice(0, limit);
}

export function readNote(id: string): Note | undefined {
  return NOTES.find((note) => note.id === id);
}
