import { Progress, formatBytes } from '../../ui/controls';

/**
 * One phase of a run or restore in progress: a bar when the total is known (or guessed), a moving
 * bar when it is not, and the figures in words.
 */
export function LiveProgress({ label, bytes, total, guessed }: { label: string; bytes?: number; total?: number; guessed?: boolean }) {
  const known = total !== undefined && total > 0;
  const words = bytes === undefined ? `${label}…` : known ? `${label}: ${formatBytes(Math.min(bytes, total))} of ${guessed ? 'about ' : ''}${formatBytes(total)}` : `${label}: ${formatBytes(bytes)}`;
  return (
    <div className="backups-progress">
      {known && bytes !== undefined ? (
        // A guess never shows as done before the run says so.
        <Progress value={guessed ? Math.min(bytes, total * 0.95) : bytes} max={total} label={label} />
      ) : (
        <div className="progress backups-indeterminate" role="progressbar" aria-label={label} aria-valuetext={words}>
          <div className="progress-bar" />
        </div>
      )}
      <span className="backups-progress-text">
        {words}
      </span>
    </div>
  );
}
