import { formatBytes, Progress } from '../../ui/controls';

export type StepName = 'pack' | 'upload' | 'scan' | 'ensure' | 'deploy';
export type StepState = 'todo' | 'active' | 'done' | 'failed';

export interface StepsState {
  pack: StepState;
  upload: StepState;
  scan: StepState;
  ensure: StepState;
  deploy: StepState;
  /** Packing: files and bytes done of the total. */
  packed: { files: number; bytes: number; totalFiles: number; totalBytes: number };
  /** Uploading: bytes sent of the tarball's size. */
  sent: { bytes: number; total: number };
}

export const initialSteps = (): StepsState => ({
  pack: 'todo',
  upload: 'todo',
  scan: 'todo',
  ensure: 'todo',
  deploy: 'todo',
  packed: { files: 0, bytes: 0, totalFiles: 0, totalBytes: 0 },
  sent: { bytes: 0, total: 0 },
});

const LABEL: Record<StepName, string> = {
  pack: 'Pack the folder',
  upload: 'Upload',
  scan: 'Detect the build plan',
  ensure: 'Create the project',
  deploy: 'Start the deployment',
};

const MARK: Record<StepState, string> = { todo: '○', active: '◌', done: '✓', failed: '✕' };
const WORD: Record<StepState, string> = { todo: 'to do', active: 'in progress', done: 'done', failed: 'failed' };

/** The steps of the flow, each with its state in words (and a bar for packing and uploading). */
export function Steps({ s, archive }: { s: StepsState; archive: boolean }) {
  const names: StepName[] = archive ? ['upload', 'scan', 'ensure', 'deploy'] : ['pack', 'upload', 'scan', 'ensure', 'deploy'];
  return (
    <ol className="new-steps" aria-label="Progress">
      {names.map((n) => (
        <li key={n} className={`new-step new-step-${s[n]}`}>
          <span aria-hidden="true" className="new-step-mark">
            {s[n] === 'active' ? <span className="spinner" /> : MARK[s[n]]}
          </span>
          <span>
            {LABEL[n]} <span className="sr-only">({WORD[s[n]]})</span>
            {n === 'pack' && s.pack !== 'todo' ? (
              <span className="muted">
                {' '}
                · {s.packed.files}/{s.packed.totalFiles} files, {formatBytes(s.packed.bytes)}
              </span>
            ) : null}
            {n === 'upload' && s.upload !== 'todo' ? (
              <span className="muted">
                {' '}
                · {formatBytes(s.sent.bytes)} of {formatBytes(s.sent.total)}
              </span>
            ) : null}
          </span>
          {n === 'pack' && s.pack === 'active' ? <Progress value={s.packed.bytes} max={s.packed.totalBytes || 1} label="Packing" /> : null}
          {n === 'upload' && s.upload === 'active' ? <Progress value={s.sent.bytes} max={s.sent.total || 1} label="Upload" /> : null}
        </li>
      ))}
    </ol>
  );
}
