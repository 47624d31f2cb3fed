// RHCOS os-release files as the host carries them, for the tests and benchmarks: the agent
// acts only on a node whose release it knows (core/platform.ts). The fields are those of a
// real RHCOS 4.9 (VERSION 49.84.<date>-0, RHEL_VERSION 8.4; stackrox/stackrox's local-nodescanner
// README quotes one), the version digits changed for the others. OPENSHIFT_VERSION is set there:
// openshift/os f61031d (4.9, manifest.yaml) sources /etc/os-release and uses ${OPENSHIFT_VERSION}
// for the motd, and `mutate-os-release: "4.9"` is what rpm-ostree writes in as the version.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const RHEL: Record<string, string> = { '4.8': '8.4', '4.9': '8.4', '4.10': '8.4', '4.11': '8.6', '4.12': '8.6' };

export function rhcosOsRelease(openshift: string): string {
  const [major, minor] = openshift.split('.');
  const rhel = RHEL[openshift] ?? '9.4';
  const version = `${major}${minor}.${rhel.replace('.', '')}.202212201621-0`;
  return [
    'NAME="Red Hat Enterprise Linux CoreOS"',
    `VERSION="${version}"`,
    'ID="rhcos"',
    'ID_LIKE="rhel fedora"',
    `VERSION_ID="${openshift}"`,
    `PLATFORM_ID="platform:el${rhel.split('.')[0]}"`,
    `PRETTY_NAME="Red Hat Enterprise Linux CoreOS ${version} (Ootpa)"`,
    'ANSI_COLOR="0;31"',
    `CPE_NAME="cpe:/o:redhat:enterprise_linux:${rhel.split('.')[0]}::coreos"`,
    'HOME_URL="https://www.redhat.com/"',
    `DOCUMENTATION_URL="https://docs.openshift.com/container-platform/${openshift}/"`,
    'BUG_REPORT_URL="https://bugzilla.redhat.com/"',
    'REDHAT_BUGZILLA_PRODUCT="OpenShift Container Platform"',
    `REDHAT_BUGZILLA_PRODUCT_VERSION="${openshift}"`,
    'REDHAT_SUPPORT_PRODUCT="OpenShift Container Platform"',
    `REDHAT_SUPPORT_PRODUCT_VERSION="${openshift}"`,
    `OPENSHIFT_VERSION="${openshift}"`,
    `RHEL_VERSION="${rhel}"`,
    `OSTREE_VERSION='${version}'`,
    '',
  ].join('\n');
}

/** Writes an RHCOS os-release of this OpenShift release into dir; returns its path. */
export function writeOsRelease(dir: string, openshift: string): string {
  const file = path.join(dir, 'os-release');
  writeFileSync(file, rhcosOsRelease(openshift));
  return file;
}
