package suggest

// wantSuggested is TestSuggest's expectation, checked by hand against
// the flows: client -> web on http from another namespace, web -> an
// outside address on 443, the DNS kept for both.
const wantSuggested = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  annotations:
    netpol.io/staged: "true"
    netpol.io/suggested-from: |-
      app/client -> shop/web-7d9f-a 8080/tcp (3 times)
      198.18.2.1 -> 198.18.1.2 8080/tcp
  name: client-suggested
  namespace: app
spec:
  egress:
  - ports:
    - port: http
      protocol: TCP
    to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: shop
      podSelector:
        matchLabels:
          app: web
  - ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
    to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: kube-system
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  podSelector:
    matchLabels:
      app: client
      tier: front
  policyTypes:
  - Ingress
  - Egress
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  annotations:
    netpol.io/staged: "true"
    netpol.io/suggested-from: |-
      app/client -> shop/web-7d9f-a 8080/tcp (3 times)
      198.18.2.1 -> 198.18.1.2 8080/tcp
      shop/web-7d9f-b -> 198.18.200.7 443/tcp (2 times)
  name: web-suggested
  namespace: shop
spec:
  egress:
  - ports:
    - port: 443
      protocol: TCP
    to:
    - ipBlock:
        cidr: 198.18.200.7/32
  - ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
    to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: kube-system
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  ingress:
  - from:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: app
      podSelector:
        matchLabels:
          app: client
          tier: front
    ports:
    - port: http
      protocol: TCP
  podSelector:
    matchLabels:
      app: web
  policyTypes:
  - Ingress
  - Egress
`
