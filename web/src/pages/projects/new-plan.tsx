import type { FormEvent } from 'react';
import { Button, Field, Input, Select } from '../../ui/controls';
import type { Scan } from './new-upload';

/** The editable plan: what the scan detected, as the form holds it (strings; empty = let the build detect it). */
export interface PlanDraft {
  name: string;
  runtime: string;
  framework: string;
  installCommand: string;
  buildCommand: string;
  startCommand: string;
  outputDirectory: string;
  rootDirectory: string;
  port: string;
}

type Detected = Pick<Scan, 'runtime' | 'framework' | 'installCommand' | 'buildCommand' | 'startCommand' | 'outputDirectory' | 'rootDirectory' | 'port'>;

export function draftOf(name: string, d: Detected): PlanDraft {
  return {
    name,
    runtime: d.runtime === 'unknown' ? '' : d.runtime,
    framework: d.framework ?? '',
    installCommand: d.installCommand ?? '',
    buildCommand: d.buildCommand ?? '',
    startCommand: d.startCommand ?? '',
    outputDirectory: d.outputDirectory ?? '',
    rootDirectory: d.rootDirectory && d.rootDirectory !== '.' ? d.rootDirectory : '',
    port: d.port ? String(d.port) : '',
  };
}

/** The ensure body's config fields from the draft: only what is filled in. */
export function configOf(d: PlanDraft): { runtime?: string; framework?: string; installCommand?: string; buildCommand?: string; startCommand?: string; outputDirectory?: string; rootDirectory?: string; port?: number } {
  const out: ReturnType<typeof configOf> = {};
  const t = (s: string) => s.trim();
  if (t(d.runtime)) out.runtime = t(d.runtime);
  if (t(d.framework)) out.framework = t(d.framework);
  if (t(d.installCommand)) out.installCommand = t(d.installCommand);
  if (t(d.buildCommand)) out.buildCommand = t(d.buildCommand);
  if (t(d.startCommand)) out.startCommand = t(d.startCommand);
  if (t(d.outputDirectory)) out.outputDirectory = t(d.outputDirectory);
  if (t(d.rootDirectory)) out.rootDirectory = t(d.rootDirectory);
  if (t(d.port)) out.port = Number(t(d.port));
  return out;
}

const RUNTIMES = ['node', 'bun', 'deno', 'python', 'go', 'ruby', 'php', 'static', 'docker'];

interface Props {
  scan: Scan;
  draft: PlanDraft;
  onChange(d: PlanDraft): void;
  onSubmit(): void;
  onBack(): void;
  busy: boolean;
  error: unknown;
}

/** The detected plan, editable, and the button that creates the project and deploys it. */
export function PlanForm({ scan, draft, onChange, onSubmit, onBack, busy, error }: Props) {
  const set = (k: keyof PlanDraft) => (e: { target: { value: string } }) => onChange({ ...draft, [k]: e.target.value });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!busy) onSubmit();
  };
  const apps = scan.apps.length > 1 ? scan.apps : [];
  return (
    <form className="card" onSubmit={submit} noValidate aria-labelledby="plan-title">
      <h2 id="plan-title">Build plan</h2>
      <p className="muted">
        Detected: <strong>{scan.framework ?? scan.runtime}</strong>
        {scan.packageManager ? ` with ${scan.packageManager}` : ''}
        {scan.monorepo ? `, a ${scan.monorepo} workspace` : ''}. Change anything before deploying; an empty field is detected again at build time.
      </p>
      <Field label="Project name" name="name" error={error}>
        {(p) => <Input {...p} value={draft.name} onChange={set('name')} maxLength={100} autoComplete="off" />}
      </Field>
      {apps.length ? (
        <Field label="App of the workspace" name="rootDirectory" error={error}>
          {(p) => (
            <Select
              {...p}
              value={draft.rootDirectory}
              onChange={(e) => {
                const app = apps.find((a) => (a.rootDirectory === '.' ? '' : a.rootDirectory) === e.target.value);
                onChange(app ? draftOf(draft.name, app) : { ...draft, rootDirectory: e.target.value });
              }}
            >
              <option value="">The whole folder</option>
              {apps.map((a) => (
                <option key={a.rootDirectory} value={a.rootDirectory === '.' ? '' : a.rootDirectory}>
                  {a.rootDirectory}
                  {a.name ? ` (${a.name})` : ''}
                </option>
              ))}
            </Select>
          )}
        </Field>
      ) : null}
      <div className="new-plan-grid">
        <Field label="Runtime" name="runtime" error={error}>
          {(p) => (
            <Select {...p} value={draft.runtime} onChange={set('runtime')}>
              <option value="">Detect at build time</option>
              {[...new Set([...RUNTIMES, ...(draft.runtime ? [draft.runtime] : [])])].map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </Select>
          )}
        </Field>
        <Field label="Framework" name="framework" error={error}>
          {(p) => <Input {...p} value={draft.framework} onChange={set('framework')} maxLength={64} autoComplete="off" />}
        </Field>
        <Field label="Port" name="port" error={error} hint="The app listens on $PORT; this is its default.">
          {(p) => <Input {...p} value={draft.port} onChange={set('port')} inputMode="numeric" autoComplete="off" />}
        </Field>
        <Field label="Output directory" name="outputDirectory" error={error}>
          {(p) => <Input {...p} value={draft.outputDirectory} onChange={set('outputDirectory')} autoComplete="off" />}
        </Field>
      </div>
      <Field label="Install command" name="installCommand" error={error}>
        {(p) => <Input {...p} className="input mono" value={draft.installCommand} onChange={set('installCommand')} autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Build command" name="buildCommand" error={error}>
        {(p) => <Input {...p} className="input mono" value={draft.buildCommand} onChange={set('buildCommand')} autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Start command" name="startCommand" error={error}>
        {(p) => <Input {...p} className="input mono" value={draft.startCommand} onChange={set('startCommand')} autoComplete="off" spellCheck={false} />}
      </Field>
      <div className="row">
        <Button type="submit" variant="primary" busy={busy}>
          Create and deploy
        </Button>
        <Button onClick={onBack} disabled={busy}>
          Choose another source
        </Button>
      </div>
    </form>
  );
}
