import type { PageProps } from '../../app';

export default function NewPage(_: PageProps) {
  return <p className="muted">This page is being built.</p>;
}
