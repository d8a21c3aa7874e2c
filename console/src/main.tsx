import '@mantine/core/styles.css';
import { createTheme, MantineProvider, type CSSVariablesResolver } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { WebStorageStateStore } from 'oidc-client-ts';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { AuthProvider } from 'react-oidc-context';
import { App } from './App.tsx';
import type { ConsoleConfig } from './api.ts';

/**
 * The console's entry: where to sign in comes from `config.json` beside the pages (written
 * by the deployment: the region's Cognito user pool, or the local issuer), then the user
 * signs in with the authorization code flow and PKCE (oidc-client-ts) and every call to the
 * console's API carries their ID token.
 */
const home = `${window.location.origin}/console/`;
const config = (await (await fetch('/console/config.json')).json()) as ConsoleConfig;
// The darker shades: white text on them meets WCAG AA contrast (4.5:1).
const theme = createTheme({ primaryShade: 8 });
// Secondary text one shade darker than the library's: 4.5:1 on white and on striped rows.
const contrast: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)' },
  dark: {},
});
const queries = new QueryClient({ defaultOptions: { queries: { retry: 1, staleTime: 5_000 } } });
const root = document.getElementById('root');
if (!root) throw new Error('no #root in index.html');

createRoot(root).render(
  <StrictMode>
    <MantineProvider theme={theme} cssVariablesResolver={contrast}>
      <AuthProvider
        authority={config.issuer}
        client_id={config.client_id}
        redirect_uri={home}
        post_logout_redirect_uri={home}
        scope="openid email profile"
        userStore={new WebStorageStateStore({ store: window.sessionStorage })}
        onSigninCallback={() => {
          window.history.replaceState({}, document.title, home);
        }}
      >
        <QueryClientProvider client={queries}>
          <App region={config.region} />
        </QueryClientProvider>
      </AuthProvider>
    </MantineProvider>
  </StrictMode>,
);
