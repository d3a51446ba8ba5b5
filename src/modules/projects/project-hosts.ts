/**
 * Where projects and their environments are served, as one object for other areas: a project's
 * serving domain, the URL the edge serves a host at, and the preview hosts (contract section 16:
 * `<branch-slug>--<project-slug>.<BERTH_APPS_DOMAIN>`, preview-domains.ts) that the deployments area
 * links to and the hosting area's edge splits.
 */
import { branchSlug, edgeUrlOf, previewHost, splitPreviewLabel } from './preview-domains.js';
import { servingDomain } from './projects.presenters.js';

export const projectHosts = {
  servingDomain,
  edgeUrlOf,
  previewHost,
  branchSlug,
  splitPreviewLabel,
} as const;
