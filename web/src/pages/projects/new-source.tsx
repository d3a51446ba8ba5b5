import { useState, type DragEvent, type InputHTMLAttributes } from 'react';
import { Field, formatBytes } from '../../ui/controls';
import { fromDirectoryInput, fromDrop, type PickedFile } from './new-pack';

export type Source = { kind: 'folder'; folder: string; files: PickedFile[] } | { kind: 'archive'; file: File };

/** React does not type the directory picker's attribute; the browser reads it as written. */
const DIRECTORY = { webkitdirectory: '', directory: '' } as InputHTMLAttributes<HTMLInputElement>;

/**
 * The source of a new project: a folder (picked, or dropped on the zone) or a .tar.gz archive.
 * Errors naming `source` show under it.
 */
export function SourcePicker({ source, onChange, error, disabled }: { source: Source | null; onChange(s: Source | null): void; error: unknown; disabled?: boolean }) {
  const [over, setOver] = useState(false);
  const onDrop = async (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    if (disabled) return;
    const got = await fromDrop(e.dataTransfer.items);
    if (got.archive) onChange({ kind: 'archive', file: got.archive });
    else if (got.files.length) onChange({ kind: 'folder', folder: got.folder, files: got.files });
  };
  return (
    <fieldset className="new-source" disabled={disabled}>
      <legend>Source</legend>
      <div
        className={`new-drop${over ? ' new-drop-over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => void onDrop(e)}
      >
        <Field label="Folder" name="source" error={error} hint="Pick your app's folder, or drop it here. node_modules/, .git/, .berth/ and what .gitignore lists stay behind.">
          {(p) => (
            <input
              {...p}
              {...DIRECTORY}
              type="file"
              className="input"
              onChange={(e) => {
                const list = e.currentTarget.files;
                if (!list || list.length === 0) return;
                const { folder, files } = fromDirectoryInput(list);
                onChange({ kind: 'folder', folder, files });
                e.currentTarget.value = '';
              }}
            />
          )}
        </Field>
        <Field label="Or a .tar.gz archive of it">
          {(p) => (
            <input
              {...p}
              type="file"
              className="input"
              accept=".tar.gz,.tgz,application/gzip"
              onChange={(e) => {
                const file = e.currentTarget.files?.[0];
                if (file) onChange({ kind: 'archive', file });
                e.currentTarget.value = '';
              }}
            />
          )}
        </Field>
      </div>
      <p className="new-chosen" aria-live="polite">
        {source ? (
          <>
            Chosen:{' '}
            <strong>
              {source.kind === 'folder' ? `${source.folder || 'folder'}/ (${source.files.length} files)` : `${source.file.name} (${formatBytes(source.file.size)})`}
            </strong>
          </>
        ) : (
          <span className="muted">Nothing chosen yet.</span>
        )}
      </p>
    </fieldset>
  );
}
