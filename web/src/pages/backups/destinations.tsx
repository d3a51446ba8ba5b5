import type { PageProps } from '../../app';

export default function DestinationsPage(_: PageProps) {
  return <p className="muted">This page is being built.</p>;
}
