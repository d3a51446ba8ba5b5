import { Component, type ReactNode } from 'react';
import { ErrorNotice } from './controls';

/** A page that throws while rendering shows the error instead of a blank screen. */
export class ErrorBoundary extends Component<{ children: ReactNode }, { error: unknown }> {
  override state = { error: null as unknown };
  static getDerivedStateFromError(error: unknown) {
    return { error };
  }
  override render() {
    if (this.state.error) return <ErrorNotice error={this.state.error} title="This page failed" />;
    return this.props.children;
  }
}
