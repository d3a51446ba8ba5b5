import { useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import type { PageProps } from '../../app';
import { api, ApiError, data } from '../../api/client';
import { Button, ErrorNotice, Field, Input, Notice } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { pack, planPack, type PackPlan } from './new-pack';
import { configOf, draftOf, PlanForm, type PlanDraft } from './new-plan';
import { SourcePicker, type Source } from './new-source';
import { initialSteps, Steps, type StepsState } from './new-steps';
import { looksGzipped, openSession, scanUpload, sendTarball, type Scan } from './new-upload';
import './new.css';

/** The fields each form shows: an error naming one of them is shown there, not above. */
const SOURCE_FIELDS = ['name', 'source'];
const PLAN_FIELDS = ['name', 'runtime', 'framework', 'port', 'outputDirectory', 'installCommand', 'buildCommand', 'startCommand'];

/** An error the page finds itself, naming its field like the API's do. */
const invalid = (field: string, message: string) => new ApiError(400, 'VALIDATION_FAILED', message, field);

/** The session's size and the relay's refusals are about what was chosen: shown under the source. */
function asSourceError(err: unknown): unknown {
  if (err instanceof ApiError && (err.field === 'sizeBytes' || err.field === 'body' || err.status === 413 || err.status === 415)) return new ApiError(err.status, err.code, err.message, 'source', err.requestId);
  return err;
}

/**
 * A new project from a folder picked in the browser: packed here into a gzipped tarball, uploaded
 * through a folder-upload session, scanned; the detected plan is shown to edit; then the project is
 * made (ensure, gitProvider upload) and its first deployment started.
 */
export default function NewProjectPage(_: PageProps) {
  const [, navigate] = useLocation();
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [source, setSource] = useState<Source | null>(null);
  const [steps, setSteps] = useState<StepsState>(initialSteps);
  const [packed, setPacked] = useState<PackPlan | null>(null);
  const [phase, setPhase] = useState<'choose' | 'uploading' | 'plan' | 'deploying'>('choose');
  const [error, setError] = useState<unknown>(null);
  const [scan, setScan] = useState<{ sessionId: string; result: Scan } | null>(null);
  const [draft, setDraft] = useState<PlanDraft | null>(null);
  const abort = useRef<AbortController | null>(null);
  const step = (patch: Partial<StepsState>) => setSteps((s) => ({ ...s, ...patch }));

  const choose = (s: Source | null) => {
    setSource(s);
    setError(null);
    setPacked(null);
    if (s?.kind === 'folder' && !name) setName(s.folder);
    if (s?.kind === 'archive' && !name) setName(s.file.name.replace(/\.(tar\.gz|tgz)$/i, ''));
  };

  const upload = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    if (!name.trim()) return setError(invalid('name', 'name the project'));
    if (!source) return setError(invalid('source', 'choose a folder or a .tar.gz archive'));
    setPhase('uploading');
    setSteps(initialSteps());
    abort.current = new AbortController();
    let current: keyof Pick<StepsState, 'pack' | 'upload' | 'scan'> = 'pack';
    try {
      let tarball: Blob;
      if (source.kind === 'folder') {
        step({ pack: 'active' });
        const plan = await planPack(source.files);
        setPacked(plan);
        if (plan.files.length === 0) throw invalid('source', 'nothing to deploy: every file of the folder is left out');
        step({ packed: { files: 0, bytes: 0, totalFiles: plan.files.length, totalBytes: plan.bytes } });
        tarball = await pack(plan, (files, bytes) => step({ packed: { files, bytes, totalFiles: plan.files.length, totalBytes: plan.bytes } }));
        step({ pack: 'done' });
      } else {
        if (!(await looksGzipped(source.file))) throw invalid('source', `${source.file.name} is not a gzipped tar archive (.tar.gz)`);
        tarball = source.file;
      }
      current = 'upload';
      step({ upload: 'active', sent: { bytes: 0, total: tarball.size } });
      const target = await openSession(name.trim(), tarball.size);
      await sendTarball(target, tarball, (bytes, total) => step({ sent: { bytes, total } }), abort.current.signal);
      step({ upload: 'done' });
      current = 'scan';
      step({ scan: 'active' });
      const result = await scanUpload(target.sessionId);
      step({ scan: 'done' });
      setScan({ sessionId: target.sessionId, result });
      setDraft(draftOf(name.trim(), result));
      setPhase('plan');
    } catch (err) {
      step({ [current]: 'failed' });
      setError(asSourceError(err));
      setPhase('choose');
    }
  };

  const deploy = async () => {
    if (!scan || !draft) return;
    setError(null);
    if (!draft.name.trim()) return setError(invalid('name', 'name the project'));
    if (draft.port.trim() && !/^\d{1,5}$/.test(draft.port.trim())) return setError(invalid('port', 'port must be a number from 1 to 65535'));
    setPhase('deploying');
    step({ ensure: 'active' });
    let stage: 'ensure' | 'deploy' = 'ensure';
    try {
      const project = await data(
        api.POST('/api/projects/ensure', { body: { name: draft.name.trim(), ...configOf(draft), gitProvider: 'upload', sessionId: scan.sessionId } }),
      );
      step({ ensure: 'done', deploy: 'active' });
      stage = 'deploy';
      const deployment = await data(api.POST('/api/deployments', { body: { projectId: project.id, sessionId: scan.sessionId } }));
      step({ deploy: 'done' });
      qc.setQueryData(['project', project.id], project);
      void qc.invalidateQueries({ queryKey: ['projects'] });
      navigate(`/projects/${project.id}/deployments/${deployment.id}`);
    } catch (err) {
      step({ [stage]: 'failed' });
      setError(err);
      setPhase('plan');
    }
  };

  const back = () => {
    setScan(null);
    setDraft(null);
    setError(null);
    setSteps(initialSteps());
    setPhase('choose');
  };

  const working = phase === 'uploading' || phase === 'deploying';
  const planFields = scan && scan.result.apps.length > 1 ? [...PLAN_FIELDS, 'rootDirectory'] : PLAN_FIELDS;
  return (
    <div className="new-project">
      <PageHeader title="New project" sub="Deploy an app from a folder on this computer." />
      {phase === 'choose' || phase === 'uploading' ? (
        <form className="card" onSubmit={(e) => void upload(e)} noValidate aria-label="Source">
          <Field label="Project name" name="name" error={error}>
            {(p) => <Input {...p} value={name} onChange={(e) => setName(e.target.value)} maxLength={100} autoComplete="off" disabled={working} />}
          </Field>
          <SourcePicker source={source} onChange={choose} error={error} disabled={working} />
          <div className="row">
            <Button type="submit" variant="primary" busy={phase === 'uploading'}>
              Upload and detect
            </Button>
            {phase === 'uploading' ? <Button onClick={() => abort.current?.abort()}>Stop</Button> : null}
          </div>
        </form>
      ) : null}
      {phase !== 'choose' || steps.pack === 'failed' || steps.upload === 'failed' || steps.scan === 'failed' ? (
        <section className="card" aria-label="Steps">
          <Steps s={steps} archive={source?.kind === 'archive'} />
          {packed ? (
            <p className="muted new-packed">
              {packed.files.length} files ({packed.skippedCount} left out{packed.skipped.length ? `: ${packed.skipped.slice(0, 6).join(', ')}${packed.skipped.length > 6 ? ', …' : ''}` : ''})
            </p>
          ) : null}
        </section>
      ) : null}
      <ErrorNotice error={error} fields={phase === 'plan' || phase === 'deploying' ? planFields : SOURCE_FIELDS} title="Could not deploy" />
      {(phase === 'plan' || phase === 'deploying') && scan && draft ? (
        <PlanForm scan={scan.result} draft={draft} onChange={setDraft} onSubmit={() => void deploy()} onBack={back} busy={phase === 'deploying'} error={error} />
      ) : null}
      {phase === 'choose' && !source ? <Notice>Or from a terminal: <code>berth deploy</code> in the app's folder does the same.</Notice> : null}
    </div>
  );
}
