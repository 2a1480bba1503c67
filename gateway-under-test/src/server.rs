//! Serving an [`App`]: the HTTP router (`http`) on a TCP listener, through the connection loop
//! of `serve` (timeouts and a connection bound), until shutdown. This is the one module that
//! joins the app to its routes, so `app` never depends on `http`.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::{http, serve};

impl App {
    /// Serves the HTTP API on `listener` until [`RunningGateway::shutdown`].
    pub fn serve(self, listener: TcpListener) -> std::io::Result<RunningGateway> {
        let addr = listener.local_addr()?;
        let shutdown = self.shutdown_token().clone();
        let router = http::router(self.clone());
        let join = tokio::spawn(serve::serve(
            listener,
            router,
            self.serve_limits(),
            shutdown,
        ));
        Ok(RunningGateway {
            app: self,
            addr,
            join,
        })
    }
}

/// A gateway serving on a socket.
#[derive(Debug)]
pub struct RunningGateway {
    app: App,
    addr: SocketAddr,
    join: JoinHandle<std::io::Result<()>>,
}

impl RunningGateway {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The served app.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// Stops accepting, cancels active runs, ends open streams and waits (at most 5 s) for the
    /// server to finish.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.app.runs().cancel_all();
        self.app.shutdown_token().cancel();
        match tokio::time::timeout(Duration::from_secs(5), self.join).await {
            Ok(Ok(result)) => result,
            Ok(Err(join_error)) => Err(std::io::Error::other(join_error)),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "server did not stop within 5 s",
            )),
        }
    }
}
