import { useState } from 'react';
import { Button, EmptyState, ErrorNotice, Field, Input, Select } from '../../ui/controls';
import { downloadHref, marksOf, PRESETS, queryOf, STREAMS, streamLabel, timeOf, type LogQuery, type RangeChoice, type SearchForm, type useLogSearch } from './log-search-model';
import './log-search.css';

type Search = ReturnType<typeof useLogSearch>;

/**
 * The search of the project's kept logs (docs/logs.md): text, time range (presets back from now, or
 * From/To in UTC), which logs. Search runs it; Clear returns to the live tail. An error of the API
 * naming one of the fields is shown under it.
 */
export function LogSearchForm({ active, busy, error, onSearch, onClear }: { active: boolean; busy: boolean; error: unknown; onSearch(q: LogQuery): void; onClear(): void }) {
  const [form, setForm] = useState<SearchForm>({ q: '', range: '1h', from: '', to: '', stream: 'runtime' });
  const set = <K extends keyof SearchForm>(k: K, v: SearchForm[K]) => setForm((f) => ({ ...f, [k]: v }));
  const custom = form.range === 'custom';
  const fields = ['q', 'stream', 'since', ...(custom ? ['until'] : [])];
  return (
    <form
      className="log-search"
      role="search"
      aria-label="Kept logs"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        onSearch(queryOf(form));
      }}
    >
      <h3>Search the kept logs</h3>
      <div className="logs-controls">
        <Field label="Text" name="q" error={error}>
          {(p) => <Input {...p} type="text" value={form.q} onChange={(e) => set('q', e.target.value)} placeholder="e.g. ERROR (case-sensitive)" autoComplete="off" spellCheck={false} />}
        </Field>
        <Field label="Time range" name={custom ? undefined : 'since'} error={error}>
          {(p) => (
            <Select {...p} value={form.range} onChange={(e) => set('range', e.target.value as RangeChoice)}>
              {PRESETS.map((r) => (
                <option key={r.key} value={r.key}>
                  {r.label}
                </option>
              ))}
              <option value="custom">Custom range</option>
            </Select>
          )}
        </Field>
        {custom ? (
          <>
            <Field label="From (UTC)" name="since" error={error}>
              {(p) => <Input {...p} type="datetime-local" step={1} value={form.from} onChange={(e) => set('from', e.target.value)} />}
            </Field>
            <Field label="To (UTC)" name="until" error={error}>
              {(p) => <Input {...p} type="datetime-local" step={1} value={form.to} onChange={(e) => set('to', e.target.value)} />}
            </Field>
          </>
        ) : null}
        <Field label="Logs" name="stream" error={error}>
          {(p) => (
            <Select {...p} value={form.stream} onChange={(e) => set('stream', e.target.value)}>
              {STREAMS.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </Select>
          )}
        </Field>
        <div className="logs-buttons">
          <Button type="submit" variant="primary" busy={busy}>
            Search
          </Button>
          {active ? (
            <Button
              variant="ghost"
              onClick={() => {
                set('q', '');
                onClear();
              }}
            >
              Clear search
            </Button>
          ) : null}
        </div>
      </div>
      <ErrorNotice error={error} title="The search failed" fields={fields} />
    </form>
  );
}

/** What a search found, oldest first, each line with its time, its stream and the text marked; older pages on request; the download of the same search. */
export function LogSearchResults({ projectId, query, search }: { projectId: string; query: LogQuery; search: Search }) {
  if (search.isError) return null;
  if (!search.data) return <p className="muted logs-status">Searching…</p>;
  const lines = [...search.data.pages].reverse().flatMap((p) => p.data);
  const stream = STREAMS.find((s) => s.value === query.stream)?.label.toLowerCase() ?? query.stream;
  return (
    <section className="log-results" aria-label="Search results">
      <div className="log-results-head">
        <p className="muted logs-status" role="status">
          {lines.length === 0 ? '' : `${lines.length}${search.hasNextPage ? '+' : ''} matching line${lines.length === 1 ? '' : 's'}, oldest first (times in UTC).`}
        </p>
        <a className="btn btn-small" href={downloadHref(projectId, query)} download>
          Download
        </a>
      </div>
      {lines.length === 0 ? (
        <EmptyState title="Nothing matched">
          <p className="muted">
            No line of {stream}
            {query.q ? <> holds “{query.q}”</> : null} in this time range. The text is matched case-sensitively; try a wider range or other logs.
          </p>
        </EmptyState>
      ) : (
        <>
          {search.hasNextPage ? (
            <Button small onClick={() => void search.fetchNextPage()} busy={search.isFetchingNextPage}>
              Show older lines
            </Button>
          ) : null}
          <ol className="found-lines" aria-label="Matching lines">
            {lines.map((l, i) => (
              <li key={`${l.ts}-${i}`} className={l.stream === 'stderr' ? 'found-line log-err' : 'found-line'}>
                <time className="log-ts" dateTime={l.ts}>
                  {timeOf(l.ts)}
                </time>{' '}
                <span className="found-stream">{streamLabel(l)}</span>{' '}
                <span className="found-text">
                  {marksOf(l.line, query.q).map((part, j) => (part.mark ? <mark key={j}>{part.text}</mark> : part.text))}
                </span>
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
