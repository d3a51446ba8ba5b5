import { useId, useState } from 'react';
import { Button, Field, TextArea } from '../../ui/controls';
import { parseDotenv } from './env-model';

/** "Paste .env": lines of a .env file become rows of the draft (saved with the rest). */
export function EnvPaste({ onPaste }: { onPaste(pairs: Array<{ key: string; value: string }>, asSecret: boolean): void }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState('');
  const [asSecret, setAsSecret] = useState(false);
  const [bad, setBad] = useState<number[]>([]);
  const panel = useId();
  const add = () => {
    const parsed = parseDotenv(text);
    setBad(parsed.bad);
    if (parsed.bad.length > 0) return;
    onPaste(parsed.pairs, asSecret);
    setText('');
    setOpen(false);
  };
  return (
    <>
      <Button aria-expanded={open} aria-controls={panel} onClick={() => setOpen((o) => !o)}>
        Paste .env
      </Button>
      {open ? (
        <div id={panel} className="card env-paste">
          <Field
            label=".env lines"
            hint="One KEY=value per line; # comments and blank lines are skipped. Keys already in the table take the pasted value."
          >
            {(p) => <TextArea {...p} value={text} onChange={(e) => setText(e.target.value)} rows={6} spellCheck={false} placeholder={'DATABASE_URL=postgres://...\nLOG_LEVEL=info'} />}
          </Field>
          {bad.length ? (
            <p className="field-error" role="alert">
              Line{bad.length > 1 ? 's' : ''} {bad.join(', ')} {bad.length > 1 ? 'are' : 'is'} not KEY=value.
            </p>
          ) : null}
          <label className="check">
            <input type="checkbox" checked={asSecret} onChange={(e) => setAsSecret(e.target.checked)} /> Mark them as secret
          </label>
          <div className="row">
            <Button variant="primary" onClick={add} disabled={text.trim() === ''}>
              Add to the table
            </Button>
            <Button onClick={() => setOpen(false)}>Cancel</Button>
          </div>
        </div>
      ) : null}
    </>
  );
}
