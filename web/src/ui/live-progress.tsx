import { Progress, formatBytes } from './controls';

/**
 * One phase of a long piece of work in progress (a backup run or restore, a cloud transfer's data):
 * a bar when the total is known (or guessed), a moving bar when it is not, and the figures in words.
 * With `figuresOnly` the text under the bar is only the figures (the caller shows the label itself).
 */
export function LiveProgress({ label, bytes, total, guessed, figuresOnly }: { label: string; bytes?: number; total?: number; guessed?: boolean; figuresOnly?: boolean }) {
  const known = total !== undefined && total > 0;
  const figures = bytes === undefined ? '' : known ? `${formatBytes(Math.min(bytes, total))} of ${guessed ? 'about ' : ''}${formatBytes(total)}` : formatBytes(bytes);
  const words = figures ? `${label}: ${figures}` : `${label}…`;
  return (
    <div className="live-progress">
      {known && bytes !== undefined ? (
        // A guess never shows as done before the run says so.
        <Progress value={guessed ? Math.min(bytes, total * 0.95) : bytes} max={total} label={label} />
      ) : (
        <div className="progress progress-indeterminate" role="progressbar" aria-label={label} aria-valuetext={words}>
          <div className="progress-bar" />
        </div>
      )}
      {figuresOnly && !figures ? null : <span className="live-progress-text">{figuresOnly ? figures : words}</span>}
    </div>
  );
}
