package metricsauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// secret is in every error the fake hub returns: no answer may show it.
const secret = "etcd-1.internal:2379 connection refused"

// The cases of controller-runtime v0.23.3's filter tests (no token 401; a token allowed the path
// and verb 200, with a PUT as "put"; allowed another path 403 "Authorization denied for user
// system:serviceaccount:default:metrics-test") and what its filter does on each way a review ends,
// except a token the hub does not authenticate: 401, where controller-runtime answers 500.
func TestFilter(t *testing.T) {
	const user = "system:serviceaccount:default:metrics-test"
	authenticated := authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
		Username: user, UID: "uid-1", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default"},
		Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
	}}
	allowed := authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: `RBAC: allowed by ClusterRoleBinding "reader"`}
	for _, tc := range []struct {
		name          string
		method, path  string
		header        []string // Authorization header values; none: no header
		tokenReview   authenticationv1.TokenReviewStatus
		tokenErr      error
		accessReview  authorizationv1.SubjectAccessReviewStatus
		accessErr     error
		wantCode      int
		wantBody      string
		wantToken     string // the token the TokenReview asks about; "": no TokenReview
		wantAccess    bool   // a SubjectAccessReview is asked
		wantLoggedErr bool
	}{
		{name: "no header", wantCode: 401, wantBody: "Unauthorized"},
		{name: "empty header", header: []string{""}, wantCode: 401, wantBody: "Unauthorized"},
		{name: "another scheme", header: []string{"Basic dXNlcjpwYXNz"}, wantCode: 401, wantBody: "Unauthorized"},
		{name: "no token", header: []string{"Bearer"}, wantCode: 401, wantBody: "Unauthorized"},
		{name: "blank token", header: []string{"Bearer   "}, wantCode: 401, wantBody: "Unauthorized"},
		{name: "a space before the token", header: []string{"Bearer  tok"}, wantCode: 401, wantBody: "Unauthorized"},
		{name: "the token alone", header: []string{"tok"}, wantCode: 401, wantBody: "Unauthorized"},
		{
			name: "unauthenticated token", header: []string{"Bearer not-a-token"},
			tokenReview: authenticationv1.TokenReviewStatus{Error: "invalid bearer token, " + secret},
			// The hub's reason is logged (at verbosity 4), not answered.
			wantCode: 401, wantBody: "Unauthorized", wantToken: "not-a-token", wantLoggedErr: true,
		},
		{
			name: "TokenReview error", header: []string{"Bearer tok"}, tokenErr: errors.New(secret),
			wantCode: 500, wantBody: "Authentication failed", wantToken: "tok", wantLoggedErr: true,
		},
		{
			name: "SubjectAccessReview error", header: []string{"Bearer tok"}, tokenReview: authenticated, accessErr: errors.New(secret),
			wantCode: 500, wantBody: "Authorization for user " + user + " failed", wantToken: "tok", wantAccess: true, wantLoggedErr: true,
		},
		{
			name: "not allowed", path: "/metrics", header: []string{"Bearer tok"}, tokenReview: authenticated,
			accessReview: authorizationv1.SubjectAccessReviewStatus{Reason: "no RBAC policy matched"},
			wantCode:     403, wantBody: "Authorization denied for user " + user, wantToken: "tok", wantAccess: true,
		},
		{
			name: "denied", header: []string{"Bearer tok"}, tokenReview: authenticated,
			accessReview: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "a deny webhook"},
			wantCode:     403, wantBody: "Authorization denied for user " + user, wantToken: "tok", wantAccess: true,
		},
		{
			name: "allowed and denied at once", header: []string{"Bearer tok"}, tokenReview: authenticated,
			accessReview: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true},
			wantCode:     403, wantBody: "Authorization denied for user " + user, wantToken: "tok", wantAccess: true,
		},
		{
			name: "allowed", header: []string{"Bearer tok"}, tokenReview: authenticated, accessReview: allowed,
			wantCode: 200, wantBody: "metrics of /metrics", wantToken: "tok", wantAccess: true,
		},
		{
			name: "allowed, scheme in lower case", header: []string{"bearer tok"}, tokenReview: authenticated, accessReview: allowed,
			wantCode: 200, wantBody: "metrics of /metrics", wantToken: "tok", wantAccess: true,
		},
		{
			name: "allowed, text after the token", header: []string{" Bearer tok more "}, tokenReview: authenticated, accessReview: allowed,
			wantCode: 200, wantBody: "metrics of /metrics", wantToken: "tok", wantAccess: true,
		},
		{
			name: "allowed another path and verb", method: http.MethodPut, path: "/debug", header: []string{"Bearer tok"},
			tokenReview: authenticated, accessReview: allowed,
			wantCode: 200, wantBody: "metrics of /debug", wantToken: "tok", wantAccess: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.method == "" {
				tc.method = http.MethodGet
			}
			if tc.path == "" {
				tc.path = "/metrics"
			}
			hub := fake.NewClientset()
			var tokenReviews []*authenticationv1.TokenReview
			hub.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
				review := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
				tokenReviews = append(tokenReviews, review.DeepCopy())
				if tc.tokenErr != nil {
					return true, nil, tc.tokenErr
				}
				review.Status = tc.tokenReview
				return true, review, nil
			})
			var accessReviews []*authorizationv1.SubjectAccessReview
			hub.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
				review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
				accessReviews = append(accessReviews, review.DeepCopy())
				if tc.accessErr != nil {
					return true, nil, tc.accessErr
				}
				review.Status = tc.accessReview
				return true, review, nil
			})

			var handled []*http.Request
			handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				handled = append(handled, req)
				_, _ = w.Write([]byte("metrics of " + req.URL.Path))
			})
			var logMu sync.Mutex
			var logged []string
			log := funcr.New(func(prefix, args string) {
				logMu.Lock()
				defer logMu.Unlock()
				logged = append(logged, args)
			}, funcr.Options{Verbosity: 4})
			filtered, err := Filter(hub.AuthenticationV1().TokenReviews(), hub.AuthorizationV1().SubjectAccessReviews())(log, handler)
			if err != nil {
				t.Fatal(err)
			}

			req := httptest.NewRequest(tc.method, "https://controller:8443"+tc.path, nil)
			for _, h := range tc.header {
				req.Header.Add("Authorization", h)
			}
			rec := httptest.NewRecorder()
			filtered.ServeHTTP(rec, req)

			if rec.Code != tc.wantCode || strings.TrimSpace(rec.Body.String()) != tc.wantBody {
				t.Errorf("answered %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
			if strings.Contains(rec.Body.String(), secret) {
				t.Errorf("the answer shows the hub's error: %q", rec.Body.String())
			}
			if (len(handled) == 1) != (tc.wantCode == http.StatusOK) || len(handled) > 1 {
				t.Errorf("the handler ran %d times on an answer %d", len(handled), rec.Code)
			}
			for _, r := range handled {
				if got := r.Header.Get("Authorization"); got != "" {
					t.Errorf("the handler saw the Authorization header %q", got)
				}
			}

			switch {
			case tc.wantToken == "" && len(tokenReviews) != 0:
				t.Errorf("asked %d TokenReviews, want none", len(tokenReviews))
			case tc.wantToken != "" && len(tokenReviews) != 1:
				t.Errorf("asked %d TokenReviews, want 1", len(tokenReviews))
			case tc.wantToken != "":
				want := authenticationv1.TokenReviewSpec{Token: tc.wantToken}
				if got := tokenReviews[0].Spec; !reflect.DeepEqual(got, want) {
					t.Errorf("TokenReview spec %+v, want %+v", got, want)
				}
			}

			switch {
			case !tc.wantAccess && len(accessReviews) != 0:
				t.Errorf("asked %d SubjectAccessReviews, want none", len(accessReviews))
			case tc.wantAccess && len(accessReviews) != 1:
				t.Errorf("asked %d SubjectAccessReviews, want 1", len(accessReviews))
			case tc.wantAccess:
				u := tc.tokenReview.User
				want := authorizationv1.SubjectAccessReviewSpec{
					User: u.Username, UID: u.UID,
					Groups:                append(append([]string{}, u.Groups...), "system:authenticated"),
					Extra:                 map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: tc.path, Verb: strings.ToLower(tc.method)},
				}
				if got := accessReviews[0].Spec; !reflect.DeepEqual(got, want) {
					t.Errorf("SubjectAccessReview spec %+v, want %+v", got, want)
				}
			}

			logMu.Lock()
			defer logMu.Unlock()
			all := strings.Join(logged, "\n")
			if loggedErr := strings.Contains(all, secret); loggedErr != tc.wantLoggedErr {
				t.Errorf("logged the hub's error: %v, want %v; log:\n%s", loggedErr, tc.wantLoggedErr, all)
			}
		})
	}
}

// The API server's rule for system:authenticated (k8s.io/apiserver's AuthenticatedGroupAdder).
func TestWithAuthenticatedGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		user   string
		groups []string
		want   []string
	}{
		{"no groups", "alice", nil, []string{"system:authenticated"}},
		{"groups", "alice", []string{"devs"}, []string{"devs", "system:authenticated"}},
		{"there already", "alice", []string{"system:authenticated", "devs"}, []string{"system:authenticated", "devs"}},
		{"unauthenticated", "alice", []string{"system:unauthenticated"}, []string{"system:unauthenticated"}},
		{"anonymous", "system:anonymous", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups := append([]string{}, tc.groups...)
			if tc.groups == nil {
				groups = nil
			}
			if got := withAuthenticatedGroup(tc.user, groups); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("withAuthenticatedGroup(%q, %q) = %q, want %q", tc.user, tc.groups, got, tc.want)
			}
			if !reflect.DeepEqual(groups, tc.groups) && tc.groups != nil {
				t.Errorf("changed its argument to %q", groups)
			}
		})
	}
}
