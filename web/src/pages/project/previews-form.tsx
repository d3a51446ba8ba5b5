import { useState } from 'react';
import { Button, ErrorNotice, Field, Input } from '../../ui/controls';
import { useCreatePreview, type OnRefused } from './previews-model';

const FIELDS = ['name', 'branch'] as const;

/** Name and branch of a new preview; the server's refusal is shown at the field it names. */
export function NewPreviewForm({ projectId, onRefused }: { projectId: string; onRefused: OnRefused }) {
  const create = useCreatePreview(projectId, onRefused);
  const [name, setName] = useState('');
  const [branch, setBranch] = useState('');
  return (
    <section className="card" aria-labelledby="pv-new">
      <h3 id="pv-new">New preview environment</h3>
      <form
        className="pv-form"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate(
            { name: name.trim(), ...(branch.trim() ? { branch: branch.trim() } : {}) },
            {
              onSuccess: () => {
                setName('');
                setBranch('');
              },
            },
          );
        }}
      >
        <div className="pv-form-fields">
          <Field label="Name" name="name" error={create.error} hint="Lowercase letters, digits and dashes, e.g. feature-login.">
            {(p) => <Input {...p} value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />}
          </Field>
          <Field label="Branch" name="branch" error={create.error} hint="The git branch it builds; its URL is made from it (else from the name).">
            {(p) => <Input {...p} value={branch} onChange={(e) => setBranch(e.target.value)} autoComplete="off" spellCheck={false} placeholder="feature/login" />}
          </Field>
        </div>
        <ErrorNotice error={create.error} title="Could not create the preview" fields={FIELDS} />
        <div className="form-actions">
          <Button type="submit" variant="primary" busy={create.isPending}>
            Create preview
          </Button>
          <span className="muted pv-form-note">It starts with a copy of production's variables, secrets included, and a volume of its own.</span>
        </div>
      </form>
    </section>
  );
}
